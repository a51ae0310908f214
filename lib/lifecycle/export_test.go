package lifecycle

import "github.com/bkit/bkit/lib/store"

// SetAfterWrite sets the purger's hook between a batch's archive write and its rows'
// deletion, for tests of a purger killed there.
func SetAfterWrite(p *Purger, f func(batch int64) error) { p.afterWrite = f }

// SetBatchMost caps a purge batch's workunits, so a group holds several batches.
func SetBatchMost(p *Purger, n int) { p.batchMost = n }

// SetBatchSized tells f the batch size each of the purger's claims asks for.
func SetBatchSized(p *Purger, f func(per int)) { p.batchSized = f }

// SetLinkFile replaces the hard link the assimilator makes of an output file (a
// link that fails as across file systems makes it copy); it returns the undo.
func SetLinkFile(f func(olddirfd int, oldpath string, newdirfd int, newpath string, flags int) error) (undo func()) {
	old := linkFile
	linkFile = f
	return func() { linkFile = old }
}

// ToTree writes jobs into a's tree as a pass does, without claiming them.
func ToTree(a *Assimilator, jobs []store.AssimilateJob) []store.AssimilateOutcome {
	return a.toTree(jobs)
}
