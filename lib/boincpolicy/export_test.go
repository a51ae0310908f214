package boincpolicy

// SetRiseCheck turns noRiseUntil's check on or off and zeroes its count
// (rise_test.go, an external test: it runs lib/sim, which imports this package).
func SetRiseCheck(on bool) { riseCheck, riseDiffs = on, 0 }

// RiseDiffs is how many of noRiseUntil's kept answers differed from the computed one.
func RiseDiffs() int { return riseDiffs }
