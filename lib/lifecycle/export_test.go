package lifecycle

// SetAfterWrite sets the purger's hook between a batch's archive write and its rows'
// deletion, for tests of a purger killed there.
func SetAfterWrite(p *Purger, f func(batch int64) error) { p.afterWrite = f }
