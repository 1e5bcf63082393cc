package sandbox

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"runtime/debug"
	"testing"
)

// readBuildInfo reads what debug/buildinfo reads from toolbox's own kind
// of binary: this test binary and /proc/self/exe's build information
// compare equal field by field.
func TestReadBuildInfoMatchesDebugBuildinfo(t *testing.T) {
	data := selfExe(t)
	want, err := buildinfo.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("debug/buildinfo: %v", err)
	}
	got, err := readBuildInfo(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("readBuildInfo: %v", err)
	}
	if got.String() != want.String() || got.GoVersion != want.GoVersion || got.Path == "" {
		t.Errorf("readBuildInfo:\n%s\ndebug/buildinfo:\n%s", got, want)
	}
}

// A file that is not an ELF Go binary, or a damaged one, is refused, never
// read in one piece larger than readBuildInfo's bounds, nor taken for the
// build it was: cuts into the headers or the build information, C
// programs, and hostile section tables (sizes and counts up to 4 GiB).
func TestReadBuildInfoRefusesDamagedFiles(t *testing.T) {
	data := selfExe(t)
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	sec := f.Section(".go.buildinfo")
	if sec == nil {
		t.Fatal("the test binary has no .go.buildinfo section")
	}
	refused := func(name string, b []byte) {
		t.Helper()
		r := &largestRead{r: bytes.NewReader(b)}
		bi, err := readBuildInfo(r)
		if r.largest > maxBuildInfoBytes {
			t.Errorf("%s: read %d bytes at once", name, r.largest)
		}
		if err == nil {
			t.Errorf("%s: read as %q", name, bi.Path)
		} else if !errors.Is(err, errNotGoELF) {
			t.Errorf("%s: %v, not errNotGoELF", name, err)
		}
	}
	// Cut inside the ELF header: refused. Damage the build information
	// (its header, version, module information, end): whatever
	// readBuildInfo makes of it, debug/buildinfo makes the same, and it is
	// not the build of the test binary.
	for _, n := range []int{0, 3, 16, 63} {
		refused("prefix", data[:n])
	}
	end := uint64(32) // the end of the module information in the section
	for range 2 {
		n, k := binary.Uvarint(data[sec.Offset+end:])
		end += uint64(k) + n
	}
	for _, n := range []uint64{0, 14, 20, 32, 40, end / 2, end - 20, end - 17} {
		b := bytes.Clone(data)
		clear(b[sec.Offset+n : sec.Offset+sec.Size])
		got, err := readBuildInfo(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, errNotGoELF) {
				t.Errorf("zeroed from %d: %v, not errNotGoELF", n, err)
			}
			continue
		}
		want, werr := buildinfo.Read(bytes.NewReader(b))
		switch {
		case werr != nil:
			t.Errorf("zeroed from %d: read, where debug/buildinfo says %v", n, werr)
		case got.String() != want.String() || got.GoVersion != want.GoVersion:
			t.Errorf("zeroed from %d: readBuildInfo:\n%s\ndebug/buildinfo:\n%s", n, got, want)
		case got.Path != "" && got.String() == mustReadBuildInfo(t, data).String():
			t.Errorf("zeroed from %d: still read as the whole build", n)
		}
	}
	// Not Go: a C program.
	for _, p := range []string{"/bin/true", "/bin/sh"} {
		if c, err := os.ReadFile(p); err == nil {
			if _, err := elf.NewFile(bytes.NewReader(c)); err == nil {
				refused(p, c)
			}
		}
	}
	// Hostile header fields: a section count past the bound, a name table
	// index past the sections, a section size past the file.
	hostile := func(name string, edit func(b []byte)) {
		b := bytes.Clone(data)
		edit(b)
		refused(name, b)
	}
	le := f.ByteOrder
	hostile("65535 sections", func(b []byte) { le.PutUint16(b[0x3c:], 0xffff) })
	hostile("name table past the sections", func(b []byte) { le.PutUint16(b[0x3e:], le.Uint16(b[0x3c:])) })
	hostile("section headers past the end", func(b []byte) { le.PutUint64(b[0x28:], uint64(len(b))) })
	hostile("class 3", func(b []byte) { b[4] = 3 })
	hostile("wrong section header size", func(b []byte) { le.PutUint16(b[0x3a:], 40) })
	// The build information section claiming 4 GiB: its size field.
	for i, s := range f.Sections {
		if s.Name == ".go.buildinfo" {
			off := int(le.Uint64(data[0x28:])) + i*64 + 32
			hostile("4 GiB build information", func(b []byte) { le.PutUint64(b[off:], 4<<30) })
			hostile("version length past the section", func(b []byte) { b[sec.Offset+32] = 0xff; b[sec.Offset+33] = 0x7f })
			hostile("pointer-format build information", func(b []byte) { b[sec.Offset+15] &^= 2 })
			hostile("no magic", func(b []byte) { b[sec.Offset] = 'x' })
		}
	}
}

func mustReadBuildInfo(t *testing.T, data []byte) *debug.BuildInfo {
	t.Helper()
	bi, err := readBuildInfo(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return bi
}

// largestRead is an io.ReaderAt that records the largest read asked of it.
type largestRead struct {
	r       io.ReaderAt
	largest int
}

func (l *largestRead) ReadAt(b []byte, off int64) (int, error) {
	l.largest = max(l.largest, len(b))
	return l.r.ReadAt(b, off)
}

// selfExe is the test binary's file: a Go ELF binary built like toolbox's.
func selfExe(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	return data
}
