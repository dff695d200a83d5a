// Package prefetch asks the processor for memory ahead of its use: hints
// that change no value and cost a few cycles, for a loop that knows which
// scattered state its next steps will read. The simulator's run loop
// names the memory of the events it runs next (each a chain of pointers
// whose every link, at the scale of the whole fabric, was a cache and TLB
// miss), and the NIC model and the transport engine say which lines of
// their own state a packet or a timer reads first.
package prefetch

// LinesOf is how many cache lines a value of size bytes may span: one
// more than it fills, as the allocator does not align values to lines.
func LinesOf(size uintptr) uintptr { return (size+63)/64 + 1 }
