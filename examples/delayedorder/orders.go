package main

import (
	"context"
	"time"
)

// Orders is the database a Service keeps its orders in, as one replica of
// the shop sees it: *Store's Orders (SQLite, one process, which holds every
// order) or *PGStore (PostgreSQL, shared by replicas, each holding the
// orders it claimed). The database is the truth about every order, and the
// clock deadlines are read on: durations are on its clock, so that the
// replicas' clocks are never compared.
type Orders interface {
	// Create stores a pending order due payWithin from now. held says
	// whether this replica holds it, and is to arm it for payWithin; if
	// not, a replica claims it later.
	Create(ctx context.Context, payWithin time.Duration) (o Order, held bool, err error)
	// Pay marks a pending order paid, and tells the replica holding it, if
	// another, to disarm it. It fails with ErrOrderCancelled,
	// ErrAlreadyPaid or ErrNotFound.
	Pay(ctx context.Context, id int64) (Order, error)
	// Cancel cancels the order if it is pending, due and held by this
	// replica, in one transaction with its row in the cancellations table.
	Cancel(ctx context.Context, id int64) (Cancellation, error)
	// Claim takes the orders this replica is now to hold: those due soon
	// that no replica holds, those whose holder let its lease run out,
	// and, with recover, those it held before it restarted. An order due
	// already is cancelled by the claim, in the same transaction.
	Claim(ctx context.Context, recover bool) (Claimed, error)
	// Listen calls l's functions as the other replicas' news arrives, until
	// the returned stop function is called, which waits for the last call.
	// It returns once listening: what is done after it is heard.
	Listen(ctx context.Context, l Listener) (stop func(), err error)
}

// Claimed is what a claim took.
type Claimed struct {
	Claims    []Claim // to arm
	Cancelled []Order // due when taken: cancelled by the claim
	// Next is when a claim may find more, from now; Never: no order is
	// known that a later claim could take.
	Next  time.Duration
	Never bool
}

// Claim is an order a replica holds: it is to cancel it when it is due,
// unless it is paid first.
type Claim struct {
	ID    int64
	DueIn time.Duration // on the database's clock when it was read
	Mine  bool          // held by this replica before: recovered, not newly claimed
}

// Cancellation is what Cancel did.
type Cancellation struct {
	Order     Order // as it stands: cancelled by this call, or as it was found
	Cancelled bool  // this call cancelled it
	// DueIn, if positive, is how long the order still has: the call came
	// early on the database's clock, and the order is to be armed again.
	DueIn time.Duration
}

// Listener is what a replica does with what the others tell it through the
// database. Its functions are called one at a time.
type Listener struct {
	Paid    func(id int64)        // an order was paid: disarm it, if held here
	ClaimIn func(d time.Duration) // a claim d from now may find an order to take
}
