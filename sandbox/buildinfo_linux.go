package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
)

// Bounds of readBuildInfo: what it reads of a file is at most the ELF
// header, maxELFSections section headers, and maxELFNames and
// maxBuildInfoBytes of two sections. toolbox's own binaries hold about 30
// sections, a section-name table of about 300 bytes and a build
// information section of a few KiB.
const (
	maxELFSections    = 1024
	maxELFNames       = 64 << 10
	maxBuildInfoBytes = 1 << 20
)

// errNotGoELF is readBuildInfo's error for a file that is not an ELF Go
// binary whose build information it can read.
var errNotGoELF = errors.New("not an ELF Go binary with build information (Go 1.18 or later)")

// readBuildInfo reads the Go build information of the ELF executable r,
// as debug/buildinfo.Read does, from its ".go.buildinfo" section alone:
// the ELF header, the section headers and the section-name table are
// read once each, within the bounds above, and nothing else is parsed
// (no symbol table, no DWARF, no decompression). toolbox uses it to check
// its own companion binaries (SameBuild), which are ELF files built by
// the same Go: build information written before Go 1.18 (pointers instead
// of inline strings) and files without that section are refused rather
// than searched for. Linking debug/buildinfo instead brought debug/elf,
// debug/dwarf and three decompressors into `toolbox run` and cost about
// 0.7 ms of its start (DESIGN.md §7, issue 13).
//
// It returns errNotGoELF (wrapped, saying what is wrong) for a file it
// cannot read so, or the read error of r.
func readBuildInfo(r io.ReaderAt) (*debug.BuildInfo, error) {
	vers, mod, err := readRawELFBuildInfo(r)
	if err != nil {
		return nil, err
	}
	bi, err := debug.ParseBuildInfo(mod)
	if err != nil {
		return nil, err
	}
	bi.GoVersion = vers
	return bi, nil
}

// readRawELFBuildInfo returns the Go version and the module information
// (its framing stripped, "" when it has none) of the ELF file r.
func readRawELFBuildInfo(r io.ReaderAt) (vers, mod string, err error) {
	notGo := func(why string, args ...any) (string, string, error) {
		return "", "", fmt.Errorf("%w: %s", errNotGoELF, fmt.Sprintf(why, args...))
	}
	var ident [64]byte
	if _, err := r.ReadAt(ident[:], 0); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return notGo("shorter than an ELF header")
		}
		return "", "", err
	}
	if !bytes.HasPrefix(ident[:], []byte("\x7fELF")) {
		return notGo("no ELF header")
	}
	var bo binary.ByteOrder
	switch ident[5] {
	case 1:
		bo = binary.LittleEndian
	case 2:
		bo = binary.BigEndian
	default:
		return notGo("ELF byte order %d", ident[5])
	}
	// The layout of the header and of a section header (elf.Header64,
	// elf.Section64 and their 32-bit forms): the fields read here.
	var (
		shoff                    uint64
		shentsize, shnum, strndx int
		wantEntSize              int
		offOff, sizeOff, nameOff int
		typeOff                  = 4
		word                     func([]byte) uint64
	)
	switch ident[4] {
	case 2: // ELFCLASS64
		word = bo.Uint64
		shoff = bo.Uint64(ident[0x28:])
		shentsize, shnum, strndx = int(bo.Uint16(ident[0x3a:])), int(bo.Uint16(ident[0x3c:])), int(bo.Uint16(ident[0x3e:]))
		wantEntSize, offOff, sizeOff = 64, 24, 32
	case 1: // ELFCLASS32
		word = func(b []byte) uint64 { return uint64(bo.Uint32(b)) }
		shoff = uint64(bo.Uint32(ident[0x20:]))
		shentsize, shnum, strndx = int(bo.Uint16(ident[0x2e:])), int(bo.Uint16(ident[0x30:])), int(bo.Uint16(ident[0x32:]))
		wantEntSize, offOff, sizeOff = 40, 16, 20
	default:
		return notGo("ELF class %d", ident[4])
	}
	switch {
	case shentsize != wantEntSize:
		return notGo("section header size %d, not %d", shentsize, wantEntSize)
	case shnum == 0 || shnum > maxELFSections:
		return notGo("%d section headers (at most %d read)", shnum, maxELFSections)
	case strndx >= shnum:
		return notGo("section-name table %d of %d sections", strndx, shnum)
	}
	headers := make([]byte, shnum*shentsize)
	if err := readFull(r, headers, shoff); err != nil {
		return notGo("reading the section headers: %v", err)
	}
	section := func(i int) (name uint32, typ uint32, off, size uint64) {
		h := headers[i*shentsize:]
		return bo.Uint32(h[nameOff:]), bo.Uint32(h[typeOff:]), word(h[offOff:]), word(h[sizeOff:])
	}
	// contents reads section i when it holds file data of at most max bytes.
	contents := func(i, max int) ([]byte, error) {
		_, typ, off, size := section(i)
		if typ == 8 { // SHT_NOBITS
			return nil, errors.New("no data in the file")
		}
		if size > uint64(max) {
			return nil, fmt.Errorf("%d bytes, over %d", size, max)
		}
		b := make([]byte, size)
		return b, readFull(r, b, off)
	}
	names, err := contents(strndx, maxELFNames)
	if err != nil {
		return notGo("reading the section-name table: %v", err)
	}
	found := -1
	for i := range shnum {
		n, _, _, _ := section(i)
		if int64(n) < int64(len(names)) {
			if rest := names[n:]; bytes.HasPrefix(rest, []byte(".go.buildinfo\x00")) {
				found = i
				break
			}
		}
	}
	if found < 0 {
		return notGo("no .go.buildinfo section")
	}
	data, err := contents(found, maxBuildInfoBytes)
	if err != nil {
		return notGo("reading .go.buildinfo: %v", err)
	}
	// The section opens with a 32-byte header: the magic, the pointer
	// size, flags; since Go 1.18 (flag 2) the version and the module
	// information follow inline, each a uvarint length and its bytes.
	const headerSize = 32
	if len(data) < headerSize || !bytes.HasPrefix(data, []byte("\xff Go buildinf:")) {
		return notGo("no build information header in .go.buildinfo")
	}
	if data[15]&2 == 0 {
		return notGo("build information of a Go before 1.18")
	}
	rest := data[headerSize:]
	str := func() (string, bool) {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return "", false
		}
		s := string(rest[k : k+int(n)])
		rest = rest[k+int(n):]
		return s, true
	}
	vers, ok1 := str()
	mod, ok2 := str()
	if !ok1 || !ok2 || vers == "" {
		return notGo("truncated build information")
	}
	// The module information is framed by two 16-byte sentinels
	// (cmd/go's modload.infoStart and infoEnd), as debug/buildinfo
	// strips them.
	if len(mod) >= 33 && mod[len(mod)-17] == '\n' {
		mod = mod[16 : len(mod)-16]
	} else {
		mod = ""
	}
	return vers, mod, nil
}

// readFull reads len(b) bytes of r at off; a short read is an error.
func readFull(r io.ReaderAt, b []byte, off uint64) error {
	if off > 1<<62 {
		return fmt.Errorf("offset %d out of range", off)
	}
	n, err := r.ReadAt(b, int64(off))
	if n == len(b) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}
