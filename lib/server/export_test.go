package server

// ChooseCursor exposes chooseCursor to the external tests.
var ChooseCursor = chooseCursor
