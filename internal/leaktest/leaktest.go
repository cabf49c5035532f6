// Package leaktest fails a test binary that leaves a goroutine behind, for
// the packages that import ants, directly or through the timer; the others
// call goleak.VerifyTestMain with no exceptions.
package leaktest

import (
	"testing"

	"go.uber.org/goleak"
)

// antsDefaultPool names the goroutines of the default pool the ants package
// starts when it is imported: they are not ours.
var antsDefaultPool = []goleak.Option{
	goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
	goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
}

// VerifyTestMain runs the package's tests and fails the binary if any
// goroutine is left when they end.
func VerifyTestMain(m *testing.M) {
	goleak.VerifyTestMain(m, antsDefaultPool...)
}

// Find returns an error naming the goroutines left running, for a TestMain
// that has its own cleanup to do after the tests and before the check.
func Find() error {
	return goleak.Find(antsDefaultPool...)
}
