package store

import (
	"context"
	"path/filepath"
	"testing"
)

// TestUpgradeKeepsAppVersions: a database made by migration 1 with app versions in it
// keeps them through migration 2's rebuild of app_version (SQLite; the MySQL path runs
// the same statements on every fresh test database).
//
// Not parallel: it shortens the package's migration list for a moment.
func TestUpgradeKeepsAppVersions(t *testing.T) {
	ctx := context.Background()
	s, err := Open("sqlite:" + filepath.Join(t.TempDir(), "old.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	saved := migrations
	migrations = saved[:1]
	_, err = s.Migrate(ctx, 1)
	migrations = saved
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`INSERT INTO app (id, name) VALUES (1, 'a')`,
		`INSERT INTO app_version (id, appid, version_num, plan_class, avg_ncpus, coproc_type, coproc_count, flops) VALUES (7, 1, 3, 'cuda', 0.5, 'NVIDIA', 1, 2e11)`,
	} {
		if _, err := s.DB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if applied, err := s.Migrate(ctx, 2); err != nil || len(applied) == 0 || applied[0] != 2 {
		t.Fatalf("upgrade: applied %v, %v", applied, err)
	}
	var avs []AppVersion
	if err := s.InTx(ctx, func(tx *Tx) (err error) { avs, err = tx.AppVersions(); return err }); err != nil {
		t.Fatal(err)
	}
	if len(avs) != 1 || avs[0].ID != 7 || avs[0].VersionNum != 3 || avs[0].PlanClass != "cuda" || avs[0].CoprocCount != 1 || avs[0].Flops != 2e11 || avs[0].Platform != "" {
		t.Fatalf("app versions after the upgrade: %+v", avs)
	}
	// The platform is part of the key now: version 3 "cuda" for a platform is new.
	if _, err := s.AddAppVersion(ctx, AppVersion{AppName: "a", VersionNum: 3, PlanClass: "cuda", Platform: "x86_64-pc-linux-gnu", AvgNCPUs: 1}, 2); err != nil {
		t.Fatal(err)
	}
}
