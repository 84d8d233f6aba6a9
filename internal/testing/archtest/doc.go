// Package archtest holds the tests that keep ARCHITECTURE.md true to the code: the rules on
// which wing may import which (TestWings) and the "may import" column of its table of packages
// (TestRooms), both read from `go list` and both rendered into the document, so that neither can
// drift from the imports. It has no code of its own.
package archtest

//go:generate go test -run ^(TestWings|TestRooms)$ -update
