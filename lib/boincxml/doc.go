// Package boincxml owns BOINC's XML formats as bkit reads and writes them: the scheduler
// request and reply exchanged between a client (brpc) and a project's scheduler
// (bserver), the project master file that names the scheduler URLs, the import of a
// real client's client_state.xml, and BOINC's client emulator scenario directories,
// read into lib/scenario's model (ReadScenario).
//
// BOINC's own parsers skip tags they do not know, and so do these: a newer client or
// server can add fields without breaking bkit. A tag bkit needs but cannot parse (a
// number that is not a number, a negative request) is an error, never silently zero.
package boincxml
