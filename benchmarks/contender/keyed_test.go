package contender

import (
	"slices"
	"testing"
	"time"
)

// Every keyed set expires a key with its value, not one removed, and not a
// moved one at its old deadline.
func TestEveryKeyedSetExpiresMovesAndRemoves(t *testing.T) {
	for _, k := range AllKeyed() {
		t.Run(k.Name, func(t *testing.T) {
			expired := make(chan uint64, 4)
			set, err := k.New(testConfig, func(key uint64, value *Item) {
				if value.ID != key {
					t.Errorf("key %d expired with the value of %d", key, value.ID)
				}
				expired <- key
			})
			if err != nil {
				t.Fatal(err)
			}
			defer set.Close()
			for key := range uint64(3) {
				if err := set.Set(key+1, &Item{key + 1}, 30*time.Millisecond); err != nil {
					t.Fatal(err)
				}
			}
			if !set.Remove(2) || !set.Move(3, time.Hour) {
				t.Fatal("Remove or Move of a pending key reported false")
			}
			// 4 is due well after 3's old deadline: when it expires, 3
			// would have too.
			if err := set.Set(4, &Item{4}, 150*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			var got []uint64
			for len(got) < 2 {
				select {
				case key := <-expired:
					got = append(got, key)
				case <-time.After(20 * time.Second):
					t.Fatalf("expired %v, want 1 and 4", got)
				}
			}
			if !slices.Equal(got, []uint64{1, 4}) {
				t.Errorf("expired %v, want 1 then 4", got)
			}
			select {
			case key := <-expired:
				t.Errorf("%d expired: removed, or moved an hour away", key)
			default:
			}
			if !set.Remove(3) {
				t.Error("Remove of the moved key reported false")
			}
		})
	}
}

func TestSelectKeyed(t *testing.T) {
	if got := SelectKeyed("keyed, minheap"); len(got) != 2 || got[0].Name != KeyedBaseline || got[1].Name != "keyed" {
		t.Errorf("SelectKeyed(keyed, minheap) = %v; want the baseline and keyed", got)
	}
	if got := SelectKeyed(""); len(got) != len(AllKeyed()) {
		t.Error("SelectKeyed(\"\") is not AllKeyed()")
	}
	if got := SelectKeyed("minheap"); len(got) != 1 || got[0].Name != KeyedBaseline {
		t.Errorf("SelectKeyed(minheap) = %v; want the baseline alone", got)
	}
}
