package transport

import (
	"testing"

	"github.com/mrc-fabric/mrcgen/compiler/fabric"
)

// The engine's default for the receiving NIC's coalescing is the fabric's.
func TestDefaultAckEveryIsTheFabrics(t *testing.T) {
	if DefaultAckEvery != fabric.DefaultAckEvery {
		t.Errorf("transport.DefaultAckEvery %d, fabric.DefaultAckEvery %d", DefaultAckEvery, fabric.DefaultAckEvery)
	}
}

// The engine's receive-window bounds are the fabric's: the least window a
// NIC holds (one SACK bitmap) and the most.
func TestReceiveWindowBoundsAreTheFabrics(t *testing.T) {
	if DefaultReceiveWindow != fabric.MinReceiveWindow || MaxReceiveWindow != fabric.MaxReceiveWindow {
		t.Errorf("transport: default %d, max %d; fabric: min %d, max %d",
			DefaultReceiveWindow, MaxReceiveWindow, fabric.MinReceiveWindow, fabric.MaxReceiveWindow)
	}
}
