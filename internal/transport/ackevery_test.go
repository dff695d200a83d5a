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
