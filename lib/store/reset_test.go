package store_test

import (
	"context"
	"testing"

	"github.com/bkit/bkit/lib/store"
)

// TestDropTables: a database emptied by DropTables migrates again from nothing, as a
// second full loop on one MySQL database does (issue 32: "app cpu already exists").
func TestDropTables(t *testing.T) {
	forEngine(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := s.AddApp(ctx, "cpu", false, 1.7e9); err != nil {
			t.Fatal(err)
		}
		if err := s.DropTables(ctx); err != nil {
			t.Fatal(err)
		}
		if v, err := s.Version(ctx); err != nil || v != 0 {
			t.Fatalf("after DropTables: schema version %d, %v; want 0", v, err)
		}
		if _, err := s.Migrate(ctx, 1.7e9); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddApp(ctx, "cpu", false, 1.7e9); err != nil {
			t.Errorf("the app again after DropTables: %v", err)
		}
	})
}
