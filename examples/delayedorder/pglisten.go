package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Listen opens a connection of its own, outside the pool, LISTENs on
// pgChannel and hands each notification to l until stopped. When the
// connection is lost it connects again, every retry period, and then calls
// l.ClaimIn(0): the notifications sent meanwhile are lost, and a claim
// learns from the database what they said.
func (s *PGStore) Listen(ctx context.Context, l Listener) (func(), error) {
	conn, err := s.listen(ctx)
	if err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.relay(lctx, conn, l)
	}()
	return func() {
		cancel()
		<-done
	}, nil
}

// listen connects and LISTENs.
func (s *PGStore) listen(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.listenCfg)
	if err != nil {
		return nil, fmt.Errorf("delayedorder: connect to listen: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{pgChannel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("delayedorder: listen: %w", err)
	}
	return conn, nil
}

// relay hands the notifications on conn to l, and connects again when conn
// is lost, until ctx ends.
func (s *PGStore) relay(ctx context.Context, conn *pgx.Conn, l Listener) {
	for {
		err := s.wait(ctx, conn, l)
		conn.Close(context.Background())
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("listening connection lost; connecting again", "after", s.cfg.retry, "err", err)
		for conn = nil; conn == nil; {
			retry := time.NewTimer(s.cfg.retry)
			select {
			case <-ctx.Done():
				retry.Stop()
				return
			case <-retry.C:
			}
			if conn, err = s.listen(ctx); err != nil {
				s.log.Warn("connecting to listen failed", "after", s.cfg.retry, "err", err)
			}
		}
		l.ClaimIn(0)
	}
}

// wait hands each notification on conn to l until an error.
func (s *PGStore) wait(ctx context.Context, conn *pgx.Conn, l Listener) error {
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if err := s.hear(n.Payload, l); err != nil {
			s.log.Warn("notification ignored", "payload", n.Payload, "err", err)
		}
	}
}

// hear acts on one notification: a payment of an order this replica holds
// disarms it; an announcement sets a floor and arms a claim: about half a
// window before the deadline of an order no replica holds (freshIn), or
// when another replica's lease runs out. This replica's own leases need
// nothing.
func (s *PGStore) hear(payload string, l Listener) error {
	f := strings.Fields(payload)
	if len(f) != 3 {
		return fmt.Errorf("unknown notification")
	}
	n, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return err
	}
	switch kind, replica, in := f[0], f[1], fromMicros(n); {
	case kind == "paid" && replica == s.replica:
		l.Paid(n)
	case kind == "paid":
	case kind == kindNames[fresh]:
		s.heard.add(time.Now().Add(in - s.cfg.window/2))
		l.ClaimIn(s.freshIn(in))
	case kind == kindNames[lease] && replica != s.replica:
		s.heard.add(time.Now().Add(in))
		l.ClaimIn(in)
	case kind != kindNames[lease]:
		return fmt.Errorf("unknown notification")
	}
	return nil
}
