package transport

import (
	"slices"
	"testing"
)

// A write held by a send limit sends its first packets up to the limit and
// not one more, however much the window allows; the last before the limit
// asks for an answer (its SACK must not wait for a packet that is not
// coming); raising the limit sends on at once, and 0 releases the rest.
func TestSendLimitHoldsFirstSends(t *testing.T) {
	e, q, _ := newSender(t, QPConfig{Segment: 10, Window: 8})
	tr, err := q.Write(WriteRequest{Data: make([]byte, 300), RKey: 1, SendLimit: 5})
	if err != nil {
		t.Fatal(err)
	}
	start := tr.StartPSN()
	idx := func(s []sent) []int {
		var out []int
		for _, x := range s {
			out = append(out, PSNDiff(x.psn, start))
		}
		return out
	}
	got := takeSent(t, e)
	if !slices.Equal(idx(got), []int{0, 1, 2, 3, 4}) {
		t.Fatalf("held at 5, sent %v; want packets 0-4", idx(got))
	}
	if !got[4].ackReq || got[3].ackReq {
		t.Errorf("ack requests %v; want the last before the limit (4) only", got)
	}
	nic := newRefNIC(start)
	for i := range 5 {
		handle(t, e, nic.deliver(t, i))
	}
	if got := takeSent(t, e); len(got) != 0 {
		t.Fatalf("every packet below the limit acked: sent %v, want nothing", idx(got))
	}
	if tr.Complete() {
		t.Fatal("held write reported complete")
	}
	tr.SetSendLimit(12)
	if got := takeSent(t, e); !slices.Equal(idx(got), []int{5, 6, 7, 8, 9, 10, 11}) {
		t.Fatalf("limit raised to 12: sent %v, want 5-11", idx(got))
	}
	tr.SetSendLimit(0)
	got = takeSent(t, e)
	if !slices.Equal(idx(got), []int{12}) {
		t.Fatalf("released with 5-11 in flight and a window of 8: sent %v, want 12", idx(got))
	}
	// Deliver what goes, as it goes, until nothing more does.
	for pending := []int{5, 6, 7, 8, 9, 10, 11, 12}; len(pending) > 0; {
		i := pending[0]
		pending = pending[1:]
		handle(t, e, nic.deliver(t, i))
		pending = append(pending, idx(takeSent(t, e))...)
	}
	if !tr.Complete() {
		t.Errorf("released write not complete after every packet was delivered: %+v", tr.Stats())
	}
	if _, err := q.Write(WriteRequest{Data: make([]byte, 10), SendLimit: -1}); err == nil {
		t.Error("a negative send limit accepted")
	}
}
