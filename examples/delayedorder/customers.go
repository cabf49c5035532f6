package main

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// front is where customers place orders and pay: a Service, or replicas
// behind a load balancer.
type front interface {
	Place(ctx context.Context) (Order, error)
	Pay(ctx context.Context, id int64) (Order, error)
}

// step is a customer's action at a time after the run started.
type step struct {
	at    time.Duration
	order int  // index among the orders the run places
	pay   bool // false: the order is placed
}

// customers returns the steps of n customers, earliest first: each places
// an order at a random time within placeOver, and with probability pay pays
// it at a random time within payBy after placing it.
func customers(seed uint64, n int, placeOver, payBy time.Duration, pay float64) []step {
	rng := rand.New(rand.NewPCG(seed, 0))
	uniform := func(d time.Duration) time.Duration {
		if d <= 0 {
			return 0
		}
		return time.Duration(rng.Int64N(int64(d)))
	}
	steps := make([]step, 0, 2*n)
	for i := range n {
		placed := uniform(placeOver)
		steps = append(steps, step{at: placed, order: i})
		if rng.Float64() < pay {
			steps = append(steps, step{at: placed + uniform(payBy), order: i, pay: true})
		}
	}
	slices.SortStableFunc(steps, func(a, b step) int { return int(a.at - b.at) })
	return steps
}

// play takes each step at its time on f, up to workers at once; a payment
// waits for its order to be placed, and is skipped if placing it failed.
// done is called after each step, one call at a time, with the order's id
// (0 if it was never placed) and the step's error; an error it returns
// ends the run, and play returns it.
func play(ctx context.Context, steps []step, f front, workers int, done func(st step, id int64, err error) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	orders := 0
	for _, st := range steps {
		orders = max(orders, st.order+1)
	}
	ids := make([]int64, orders)
	placed := make([]chan struct{}, orders) // closed once ids[i] is written
	for i := range placed {
		placed[i] = make(chan struct{})
	}
	var mu sync.Mutex // serialises done
	take := func(st step) {
		var (
			o   Order
			err error
		)
		if st.pay {
			select {
			case <-placed[st.order]:
			case <-ctx.Done():
				return
			}
			if ids[st.order] == 0 {
				return
			}
			o, err = f.Pay(ctx, ids[st.order])
			o.ID = ids[st.order]
		} else {
			o, err = f.Place(ctx)
			ids[st.order] = o.ID
			close(placed[st.order])
		}
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() == nil {
			if err := done(st, o.ID, err); err != nil {
				cancel(err)
			}
		}
	}

	work := make(chan step)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for st := range work {
				take(st)
			}
		})
	}
	start := time.Now()
dispatch:
	for _, st := range steps {
		if !sleepUntil(ctx, start.Add(st.at)) {
			break
		}
		select {
		case work <- st:
		case <-ctx.Done():
			break dispatch
		}
	}
	close(work)
	wg.Wait()
	return context.Cause(ctx)
}

// sleepUntil waits until t, and reports false if ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
