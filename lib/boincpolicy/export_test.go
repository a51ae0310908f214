package boincpolicy

// SetRiseCheck turns noRiseUntil's check on or off and zeroes its count
// (rise_test.go, an external test: it runs lib/sim, which imports this package).
func SetRiseCheck(on bool) { riseCheck, riseDiffs = on, 0 }

// RiseDiffs is how many of noRiseUntil's kept answers differed from the computed one.
func RiseDiffs() int { return riseDiffs }

// SetNoneYetCheck turns Next's check of NoneYet on or off and zeroes its count
// (rise_test.go).
func SetNoneYetCheck(on bool) { noneYetCheck, noneYetDiffs = on, 0 }

// NoneYetDiffs is how many of NoneYet's answers next contradicted.
func NoneYetDiffs() int { return noneYetDiffs }

// SetFallCheck turns prepareJobs' fall check on or off and zeroes its count
// (fall_test.go).
func SetFallCheck(on bool) { fallCheck, fallBreaks = on, 0; clear(fallSeen) }

// FallBreaks is how many jobs fell faster than prepareJobs' fall allowed.
func FallBreaks() int { return fallBreaks }

// SetFetchCheck turns the work fetch hold's check on or off and zeroes its count
// (fetchhold_test.go).
func SetFetchCheck(on bool) { fetchCheck, fetchDiffs = on, 0 }

// FetchDiffs is how many of the fetch hold's answers a whole work fetch contradicted.
func FetchDiffs() int { return fetchDiffs }

// SetEDFCheck turns earliestMiss's check against edfScan on or off and zeroes its
// count; noSort leaves edfOrder's jobs unsorted (edf_test.go).
func SetEDFCheck(on, noSort bool) {
	edfCheck, edfNoSort, edfDiffs, edfTiedChecks = on, noSort && on, 0, 0
}

// EDFDiffs is how many of earliestMiss's answers edfScan contradicted.
func EDFDiffs() int { return edfDiffs }

// EDFTiedChecks is how many of earliestMiss's answers checked came from its order of
// a run of one deadline (edfTied).
func EDFTiedChecks() int { return edfTiedChecks }

// SetLowCheck turns the checks of listLower's kept ends and of lowFall's rates on or
// off and zeroes their count (listlower_test.go).
func SetLowCheck(on bool) { lowCheck, lowDiffs = on, 0 }

// LowDiffs is how many of listLower's bounds and lowFall's rates differed from those
// worked out in full.
func LowDiffs() int { return lowDiffs }

// SetLowKeptCheck is SetLowCheck that also zeroes the count of missBounds' and
// lowFall's kept works checked; wrongLow makes lowSame leave simGen out (lowBreak),
// wrongFall fallSame the d's (fallBreak) (listlower_test.go).
func SetLowKeptCheck(on, wrongLow, wrongFall bool) {
	SetLowCheck(on)
	lowKeptChecks, lowBreak, fallBreak = 0, on && wrongLow, on && wrongFall
}

// LowKeptChecks is how many of missBounds' and lowFall's kept works were checked.
func LowKeptChecks() int { return lowKeptChecks }

// SetEDFSureCheck turns edfListingSure's check against the pairs of every job on or
// off and zeroes its count (edf_test.go).
func SetEDFSureCheck(on bool) { edfSureCheck, edfSureDiffs = on, 0 }

// EDFSureDiffs is how many of edfListingSure's answers differed from those over the
// pairs of every job.
func EDFSureDiffs() int { return edfSureDiffs }

// SetViewCheck turns the check of refreshed views against views built afresh on or off
// and zeroes its count (viewcheck_test.go).
func SetViewCheck(on bool) { viewCheck, viewDiffs = on, 0 }

// ViewDiffs is how many refreshed views differed from views built afresh.
func ViewDiffs() int { return viewDiffs }

// SetPassCheck turns the check of the passes cut short and held on hosts with
// coprocessor jobs on or off and zeroes its counts (copasses_test.go).
func SetPassCheck(on bool) { passCheck, passDiffs, passChecks, sliceChecks = on, 0, 0, 0 }

// PassDiffs is how many of those passes a whole pass contradicted; PassChecks how
// many were checked.
func PassDiffs() int  { return passDiffs }
func PassChecks() int { return passChecks }

// SetCoOnceCheck turns coOnceCheck on or off and zeroes its count; wrong > 0 makes
// coCPUsOnce's bound wrong (coOnceWrong), 3 coExactBlocked's (coExactWrong).
func SetCoOnceCheck(on bool, wrong int) {
	coOnceCheck, coOnceDiffs, coOnceChecks, coOnceWrong, coExactWrong = on, 0, 0, 0, false
	if on {
		coOnceWrong, coExactWrong = wrong, wrong == 3
	}
}

// CoOnceDiffs is how many picks took more coprocessor jobs' CPUs than coCPUsOnce's bound.
func CoOnceDiffs() int { return coOnceDiffs }

// CoOnceChecks is how many of missesKnown's answers coOnceCheck held to a simulation.
func CoOnceChecks() int { return coOnceChecks }

// SetRelistCheck turns the check of missesRelist's carried answers against the whole
// simulation on or off and zeroes its counts (relist_test.go).
func SetRelistCheck(on bool) {
	relistCheck, relistDiffs, relistChecks, stayDiffs, stayChecks = on, 0, 0, 0, 0
	boundDiffs, boundChecks = 0, 0
}

// BoundDiffs and BoundChecks are RelistDiffs and RelistChecks for the answers
// missesRebound carried.
func BoundDiffs() int  { return boundDiffs }
func BoundChecks() int { return boundChecks }

// StayDiffs and StayChecks are RelistDiffs and RelistChecks for the answers
// missesStay carried.
func StayDiffs() int  { return stayDiffs }
func StayChecks() int { return stayChecks }

// RelistDiffs is how many of the answers missesRelist carried the simulation
// contradicted; RelistChecks how many were checked.
func RelistDiffs() int { return relistDiffs }

// RelistChecks is how many of the answers missesRelist carried were checked.
func RelistChecks() int { return relistChecks }

// SetListedCheck turns the check of missesListed's answers (and of those kept from
// them) against the whole simulation on or off and zeroes its counts.
func SetListedCheck(on bool) {
	listedCheck, listedDiffs, listedChecks, orderDiffs, orderChecks, nowChecks, replayChecks = on, 0, 0, 0, 0, 0, 0
}

// SetNoPickOrder turns pickListed's second case (several projects under BOINC's
// emulator) off or back on.
func SetNoPickOrder(on bool) { noPickOrder = on }

// OrderDiffs and OrderChecks are ListedDiffs and ListedChecks for the answers in
// pickListed's order of several projects (BOINC's emulator).
func OrderDiffs() int  { return orderDiffs }
func OrderChecks() int { return orderChecks }

// NowChecks is how many of missesListedPick's answers under bsim's conventions were
// checked.
func NowChecks() int { return nowChecks }

// ReplayChecks is how many of judgeReplayed's answers were checked.
func ReplayChecks() int { return replayChecks }

// ListedDiffs is how many of missesListed's answers (and of those kept from them) the
// simulation contradicted; ListedChecks how many were checked.
func ListedDiffs() int  { return listedDiffs }
func ListedChecks() int { return listedChecks }

// SetListedCoCheck is SetListedCheck with missesListedCo's own count zeroed too;
// ListedCoChecks is how many of missesListedCo's answers were checked.
func SetListedCoCheck(on bool) { SetListedCheck(on); coListedChecks = 0 }
func ListedCoChecks() int      { return coListedChecks }

// SetPiggybackCheck turns the check of quietPiggybackNone's answers that read
// saturatedPast against a whole Piggyback on or off and zeroes its counts
// (piggyback_test.go).
func SetPiggybackCheck(on bool) { piggybackCheck, piggybackDiffs, piggybackChecks = on, 0, 0 }

// PiggybackDiffs is how many of those answers the whole Piggyback contradicted;
// PiggybackChecks how many were checked.
func PiggybackDiffs() int  { return piggybackDiffs }
func PiggybackChecks() int { return piggybackChecks }

// SliceChecks is how many of the passes passCheck checked were held past a running
// job's slice's end (sliceFree).
func SliceChecks() int { return sliceChecks }

// SetSatCoCheck turns saturatedLow's check on hosts with coprocessors on or off and
// zeroes its counts.
func SetSatCoCheck(on bool) { satCoCheck, satCoDiffs, satCoChecks = on, 0, 0 }

// SatCoDiffs is how many of saturatedLow's answers there a whole work fetch contradicted.
func SatCoDiffs() int { return satCoDiffs }

// SatCoChecks is how many of saturatedLow's answers there were checked.
func SatCoChecks() int { return satCoChecks }

// SetArrivedCheck turns the checks of the holds carried across an RPC's new jobs on
// or off (arrivedKeeps' answers against a whole Arrived pass, and passCheck's of
// every pass held) and zeroes their counts (arrived_test.go).
func SetArrivedCheck(on bool) {
	arrivedCheck, arrivedDiffs, arrivedChecks, arrivedHolds = on, 0, 0, 0
	SetPassCheck(on)
}

// ArrivedDiffs is how many of arrivedKeeps' answers a whole pass contradicted;
// ArrivedChecks how many answers arrivedKeeps and arrivedHold gave.
func ArrivedDiffs() int  { return arrivedDiffs }
func ArrivedChecks() int { return arrivedChecks + arrivedHolds }

// SetServedCheck turns the check of projectServed's kept priorities against priorities
// worked out afresh on or off and zeroes its counts (served_test.go).
func SetServedCheck(on bool) { servedCheck, servedDiffs, servedChecks = on, 0, 0 }

// ServedDiffs is how many projects' CPUs served or box margins differed.
func ServedDiffs() int { return servedDiffs }

// ServedChecks is how many projects' CPUs served were checked.
func ServedChecks() int { return servedChecks }

// SetStatsCheck turns the check of projectStats' kept figures (statsTimes) against
// the walk afresh on or off and zeroes its counts (stats_test.go).
func SetStatsCheck(on bool) { statsCheck, statsDiffs, statsChecks = on, 0, 0 }

// StatsDiffs is how many kept answers of projectStats differed from the walk.
func StatsDiffs() int { return statsDiffs }

// StatsChecks is how many kept answers of projectStats were checked.
func StatsChecks() int { return statsChecks }

// SetPrepCheck turns prepSame's check on or off and zeroes its counts; wrong makes
// prepSame leave simGen out (prepBreak) (prep_test.go).
func SetPrepCheck(on, wrong bool) {
	prepCheck, prepDiffs, prepChecks, prepBreak = on, 0, 0, on && wrong
}

// PrepDiffs is how many of prepSame's kept works the whole work contradicted;
// PrepChecks how many were checked.
func PrepDiffs() int  { return prepDiffs }
func PrepChecks() int { return prepChecks }

// SetNextBestCheck turns simulateFrom's check of nextBest on or off and zeroes its
// counts.
func SetNextBestCheck(on bool) { nextBestCheck, nextBestDiffs, nextBestChecks = on, 0, 0 }

// NextBestDiffs is how many of the steps' nextBest a scan afresh contradicted;
// NextBestChecks how many were checked.
func NextBestDiffs() int  { return nextBestDiffs }
func NextBestChecks() int { return nextBestChecks }

// SetAlikeCheck turns the check of the passes rehold made with misses other than the
// carried listing's (missesAlike) on or off and zeroes its counts (alike_test.go);
// runHold is off while it is on (noRunHold: its holds, set without a listing, leave
// rehold fewer listings to carry).
func SetAlikeCheck(on bool) { alikeCheck, alikeDiffs, alikeChecks, noRunHold = on, 0, 0, on }

// AlikeDiffs is how many of those passes a whole pass contradicted; AlikeChecks how
// many were checked.
func AlikeDiffs() int  { return alikeDiffs }
func AlikeChecks() int { return alikeChecks }

// SetRunHoldCheck turns passCheck on or off (every pass held, runHold's too, against a
// whole pass) and zeroes its counts and runHolds (runhold_test.go).
func SetRunHoldCheck(on bool) {
	SetPassCheck(on)
	runHolds = 0
}

// RunHolds is how many holds runHold set with the check on.
func RunHolds() int { return runHolds }

// SetSatBelowCheck turns the check of saturatedBelow's bound against saturatedBound's
// and saturatedList's walks on or off and zeroes its counts (tests only).
func SetSatBelowCheck(on bool) { satBelowCheck, satBelowDiffs, satBelowChecks = on, 0, 0 }

// SatBelowDiffs is how many of saturatedBelow's calls a walk's bound passed;
// SatBelowChecks how many were checked.
func SatBelowDiffs() int  { return satBelowDiffs }
func SatBelowChecks() int { return satBelowChecks }

// SetKnownCheck turns prepareWhole's check of the jobs' known marks on or off and
// zeroes its counts (prep_test.go).
func SetKnownCheck(on bool) { knownCheck, knownDiffs, knownChecks = on, 0, 0 }

// KnownDiffs is how many jobs' known marks their tasks contradicted at prepareWhole;
// KnownChecks how many were checked.
func KnownDiffs() int  { return knownDiffs }
func KnownChecks() int { return knownChecks }

// SetRelistableCheck turns the check of relistable's kept answers against the walk of
// the jobs on or off and zeroes its counts (relist_test.go).
func SetRelistableCheck(on bool) { relistableCheck, relistableChecks, relistableDiffs = on, 0, 0 }

// RelistableChecks is how many of relistable's kept answers were checked;
// RelistableDiffs, how many the walk contradicted.
func RelistableChecks() int { return relistableChecks }
func RelistableDiffs() int  { return relistableDiffs }

// SetSimReplayCheck turns the check of simulateReplayed's simulations against the
// whole one on or off and zeroes its counts.
func SetSimReplayCheck(on bool) { simReplayCheck, simReplayDiffs, simReplayChecks = on, 0, 0 }

// SimReplayDiffs is how many of simulateReplayed's simulations the whole one
// contradicted; SimReplayChecks how many were checked.
func SimReplayDiffs() int  { return simReplayDiffs }
func SimReplayChecks() int { return simReplayChecks }

// SetRankCheck turns the check of bestCPUByPriority's kept first jobs against the walk
// of every project's lists on or off and zeroes its counts (rank_test.go).
func SetRankCheck(on bool) { rankCheck, rankDiffs, rankChecks = on, 0, 0 }

// RankDiffs is how many of bestCPUByPriority's answers the walk contradicted;
// RankChecks how many were checked.
func RankDiffs() int  { return rankDiffs }
func RankChecks() int { return rankChecks }

// SetSameCheck turns the check of missesKnown's levels passed over for serving the
// same CPUs (servedSame) on or off, and zeroes its counts.
func SetSameCheck(on bool) { sameCheck, sameChecks, sameDiffs = on, 0, 0 }

// SameChecks is how many levels servedSame passed over were tried all the same.
func SameChecks() int { return sameChecks }

// SameDiffs is how many of those decided the job the level before left open.
func SameDiffs() int { return sameDiffs }
