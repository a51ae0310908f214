package bretry

// RowsHandled is what a run records as the rows it handled (bserver.RecordRun): the
// due workunits examined, the results marked lost and the workunits validated.
func (s Summary) RowsHandled() int64 { return int64(s.Examined + s.Lost + s.Validated) }
