// Package leaktest fails a test binary that leaves a goroutine behind, for
// the packages that import ants, directly or through the timer; the others
// call goleak.VerifyTestMain with no exceptions.
package leaktest

import (
	"testing"

	"go.uber.org/goleak"
)

// VerifyTestMain runs the package's tests and fails the binary if any
// goroutine is left when they end. The ants package starts a default pool
// of its own when it is imported; its two goroutines are not ours.
func VerifyTestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreTopFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	)
}
