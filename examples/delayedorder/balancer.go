package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"
)

// balancer is a load balancer in front of the replicas' HTTP APIs, as the
// customers of -customers see them: it sends each request to a replica at
// random and, when that one cannot be reached (killed, restarting) or is
// shutting down, to another.
type balancer struct {
	client  *http.Client
	retried atomic.Int64 // requests sent again to another replica

	addrs []string // the replicas' base URLs
}

// newBalancer returns a balancer in front of the replicas at the given
// base URLs (http://host:port).
func newBalancer(addrs []string) (*balancer, error) {
	if len(addrs) == 0 {
		return nil, errors.New("delayedorder: no replica to send customers to")
	}
	for _, a := range addrs {
		if u, err := url.Parse(a); err != nil || u.Scheme != "http" || u.Host == "" {
			return nil, fmt.Errorf("delayedorder: replica %q: want http://host:port", a)
		}
	}
	return &balancer{
		client: &http.Client{
			Transport: &http.Transport{MaxIdleConnsPerHost: 64},
			Timeout:   30 * time.Second,
		},
		addrs: addrs,
	}, nil
}

// post sends the request to a replica, and to another when one cannot be
// reached or is shutting down. retried says whether it was sent twice:
// the first may have committed without its answer coming back.
func (b *balancer) post(ctx context.Context, path string) (code int, body orderJSON, retried bool, err error) {
	// The replicas from a random one on, twice round, then a pause and
	// again, for 10 s: a replica restarting comes back.
	first := rand.IntN(len(b.addrs))
	giveUp := time.Now().Add(10 * time.Second)
	for attempt := 0; ; attempt++ {
		if attempt > 0 && attempt%(2*len(b.addrs)) == 0 {
			if time.Now().After(giveUp) {
				return 0, body, retried, fmt.Errorf("POST %s: no replica answers: %w", path, err)
			}
			if !sleepUntil(ctx, time.Now().Add(100*time.Millisecond)) {
				return 0, body, retried, ctx.Err()
			}
		}
		addr := b.addrs[(first+attempt)%len(b.addrs)]
		retried = attempt > 0
		if retried {
			b.retried.Add(1)
		}
		var req *http.Request
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, addr+path, nil)
		if err != nil {
			return 0, body, retried, err
		}
		var resp *http.Response
		if resp, err = b.client.Do(req); err != nil {
			if ctx.Err() != nil {
				return 0, body, retried, ctx.Err()
			}
			continue
		}
		body = orderJSON{}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil || resp.StatusCode == http.StatusServiceUnavailable {
			continue
		}
		return resp.StatusCode, body, retried, nil
	}
}

// Place places an order on some replica.
func (b *balancer) Place(ctx context.Context) (Order, error) {
	code, body, _, err := b.post(ctx, "/orders")
	switch {
	case err != nil:
		return Order{}, err
	case code != http.StatusCreated || body.Deadline == nil:
		return Order{}, fmt.Errorf("POST /orders: %d %s", code, body.Error)
	}
	return Order{ID: body.ID, Status: body.Status, Deadline: *body.Deadline}, nil
}

// Pay pays the order on some replica. A payment found already made after
// a retry is the first attempt's, which committed.
func (b *balancer) Pay(ctx context.Context, id int64) (Order, error) {
	path := fmt.Sprintf("/orders/%d/pay", id)
	code, body, retried, err := b.post(ctx, path)
	o := Order{ID: id, Status: body.Status}
	switch {
	case err != nil:
		return o, err
	case code == http.StatusOK, code == http.StatusConflict && body.Status == Paid && retried:
		return o, nil
	case code == http.StatusConflict && body.Status == Cancelled:
		return o, fmt.Errorf("POST %s: %w", path, ErrOrderCancelled)
	case code == http.StatusConflict && body.Status == Paid:
		return o, fmt.Errorf("POST %s: %w", path, ErrAlreadyPaid)
	case code == http.StatusNotFound:
		return o, fmt.Errorf("POST %s: %w", path, ErrNotFound)
	}
	return o, fmt.Errorf("POST %s: %d %s", path, code, body.Error)
}
