//go:build race

package supervisor

// floodBytes is smaller under the race detector, which slows the copy
// path about tenfold; the bound checked is the same.
const floodBytes = 64 << 20
