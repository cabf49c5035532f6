package main

import (
	"net"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// deadAddress returns the base URL of an address nothing listens on.
func deadAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return "http://" + addr
}

// TestBalancerSkipsAReplicaThatIsDown: requests go to the replica that
// answers, whichever the balancer tries first.
func TestBalancerSkipsAReplicaThatIsDown(t *testing.T) {
	sh, _ := newShop(t)
	srv := httptest.NewServer(shopHandler(sh.svc, &counter{r: &report{}, ev: &eventLog{}}, discardLogger()))
	defer srv.Close()
	lb, err := newBalancer([]string{deadAddress(t), srv.URL})
	require.NoError(t, err)
	defer lb.client.CloseIdleConnections()

	for range 10 {
		o, err := lb.Place(t.Context())
		require.NoError(t, err)
		assert.Equal(t, Pending, o.Status)
		_, err = lb.Pay(t.Context(), o.ID)
		require.NoError(t, err)
	}
	assert.Positive(t, lb.retried.Load(), "some requests tried the dead replica first")
	_, err = lb.Pay(t.Context(), 999)
	require.ErrorIs(t, err, ErrNotFound)
}

func TestBalancerRejectsBadAddresses(t *testing.T) {
	for _, addrs := range [][]string{nil, {"localhost:80"}, {"ftp://x"}, {"http://"}} {
		_, err := newBalancer(addrs)
		assert.Error(t, err, "%q", addrs)
	}
}
