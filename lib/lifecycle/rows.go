package lifecycle

// RowsHandled is what a run of the assimilator records as the rows it handled
// (bserver.RecordRun): the workunits it handed over or failed to.
func (s AssimilateSummary) RowsHandled() int64 { return int64(s.Assimilated + s.Failed) }

// RowsHandled is what a run of the file deleter records as the rows it handled: the
// workunits it cleaned and the files it deleted or refused.
func (s DeleteSummary) RowsHandled() int64 { return int64(s.Workunits + s.Files + s.Refused) }

// RowsHandled is what a run of the purger records as the rows it handled: the rows
// it moved into the archive.
func (s PurgeSummary) RowsHandled() int64 { return int64(s.Rows) }
