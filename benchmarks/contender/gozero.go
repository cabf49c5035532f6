package contender

import (
	"time"

	"github.com/zeromicro/go-zero/core/collection"
)

// goZero is go-zero's collection.TimingWheel: a rounds-based wheel whose
// goroutine receives every Set and Remove over an unbuffered channel.
type goZero struct {
	tw *collection.TimingWheel
}

func goZeroContender() Contender {
	return Contender{
		Name:            "go-zero",
		Ticked:          true,
		ReleasesOnClose: true,
		Executor:        "one goroutine per tick runs that tick's tasks in turn",
		Note: "go-zero core/collection.TimingWheel v1.10.3; keyed, so each timeout needs a fresh key " +
			"(an 8-byte allocation counted in its figures); RemoveTimer cannot report whether it won " +
			"against the expiry, so Cancel reports true",
		New: newGoZero,
	}
}

func newGoZero(cfg Config) (Timer, error) {
	tw, err := collection.NewTimingWheel(cfg.Tick, cfg.WheelSize, func(_, value any) {
		value.(func())()
	})
	if err != nil {
		return nil, err
	}
	return &goZero{tw: tw}, nil
}

func (g *goZero) Schedule(delay time.Duration, f func()) (Handle, error) {
	// go-zero rejects a delay <= 0; the smallest it takes is rounded up to
	// one interval anyway.
	delay = max(delay, 1)
	key := new(int64) // a unique, hashable key per timeout
	if err := g.tw.SetTimer(key, f, delay); err != nil {
		return nil, err
	}
	return key, nil
}

func (g *goZero) Cancel(h Handle) bool { return g.tw.RemoveTimer(h) == nil }

// Rearm is MoveTimer, which hands the key to the wheel's goroutine over an
// unbuffered channel, as every other call does.
func (g *goZero) Rearm(h Handle, delay time.Duration) (Handle, error) {
	return h, g.tw.MoveTimer(h, max(delay, 1))
}

func (g *goZero) Close() { g.tw.Stop() }
