//go:build !race

package supervisor

// floodBytes is what TestFloodKeepsMemoryBounded writes.
const floodBytes = 256 << 20
