package scenario

import (
	"testing"

	"github.com/wheeltimer/wheeltimer/internal/leaktest"
)

func TestMain(m *testing.M) {
	leaktest.VerifyTestMain(m)
}
