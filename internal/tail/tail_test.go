package tail

import "testing"

func TestBuffer(t *testing.T) {
	b := &Buffer{Max: 8}
	for _, s := range []string{"hello ", "wörld ", "and more\n"} {
		b.Write([]byte(s))
	}
	if got := b.String(); got != "nd more" {
		t.Errorf("String = %q", got)
	}
	// The last three bytes of "aéé" start inside the first é.
	b = &Buffer{Max: 3}
	b.Write([]byte("aéé"))
	if got := b.String(); got != "é" {
		t.Errorf("cut inside a character: %q", got)
	}
	var zero Buffer
	if n, err := zero.Write([]byte("x")); n != 1 || err != nil || zero.String() != "" {
		t.Errorf("zero value: %d %v %q", n, err, zero.String())
	}
}
