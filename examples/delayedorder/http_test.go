package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// post sends an empty POST and decodes the order answered.
func post(t *testing.T, url string) (int, orderJSON) {
	t.Helper()
	resp, err := http.Post(url, "", nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	var body orderJSON
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	return resp.StatusCode, body
}

func TestShopHandlerPlacesAndPays(t *testing.T) {
	sh, _ := newShop(t)
	srv := httptest.NewServer(shopHandler(sh.svc, &counter{r: &report{}, ev: &eventLog{}}, discardLogger()))
	defer srv.Close()

	code, o := post(t, srv.URL+"/orders")
	require.Equal(t, http.StatusCreated, code, o.Error)
	assert.Equal(t, Pending, o.Status)
	require.NotNil(t, o.Deadline)
	assert.Equal(t, t0.Add(payWithin), *o.Deadline)

	code, paid := post(t, srv.URL+"/orders/"+itoa(o.ID)+"/pay")
	assert.Equal(t, http.StatusOK, code, paid.Error)
	assert.Equal(t, Paid, paid.Status)
	assert.Zero(t, sh.svc.Armed(), "the payment disarmed the order")

	code, again := post(t, srv.URL+"/orders/"+itoa(o.ID)+"/pay")
	assert.Equal(t, http.StatusConflict, code)
	assert.Equal(t, Paid, again.Status, "already paid")
	code, _ = post(t, srv.URL+"/orders/999/pay")
	assert.Equal(t, http.StatusNotFound, code)
	code, bad := post(t, srv.URL+"/orders/x/pay")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, bad.Error, "positive integer")
}

func TestShopHandlerRefusesAPaymentAfterTheCancellation(t *testing.T) {
	sh, fake := newShop(t)
	srv := httptest.NewServer(shopHandler(sh.svc, &counter{r: &report{}, ev: &eventLog{}}, discardLogger()))
	defer srv.Close()
	_, o := post(t, srv.URL+"/orders")
	fake.Advance(payWithin + tick)
	code, refused := post(t, srv.URL+"/orders/"+itoa(o.ID)+"/pay")
	assert.Equal(t, http.StatusConflict, code)
	assert.Equal(t, Cancelled, refused.Status, "to be refunded")
}
