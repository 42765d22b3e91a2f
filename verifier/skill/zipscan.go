package skill

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// A skill archive is a subset of ZIP that has one reading. Before
// archive/zip sees the bytes, scanArchive walks them itself and requires
// this layout:
//
//	offset 0 ┌──────────────────────────────────────────────┐
//	         │ local header 1: 30 bytes + name (no extra)   │ the entries tile
//	         │ data 1: compressed-size bytes                │ [0, directory) exactly:
//	         │ local header 2 ...                           │ nothing before, between
//	         │ data 2 ...                                   │ or overlapping them
//	         ├──────────────────────────────────────────────┤
//	         │ central directory: 46 bytes + name per entry │ no extra, no comment
//	         ├──────────────────────────────────────────────┤
//	         │ end record: 22 bytes, comment length 0       │ the last byte of the file
//	 EOF     └──────────────────────────────────────────────┘
//
// Every entry: a regular file with a safe name (checkPath), unique even
// when case is folded, Store or Deflate, no flags but the informational
// ones (no encryption, no data descriptor), format version 2.0 at most (no
// zip64), a local header that repeats its central record field for field,
// sizes within the Limits and a compression ratio within Limits.Ratio.
//
// Go's reader finds entries through the central directory and reads only
// lengths from local headers; a streaming reader does the opposite. With
// the two required to agree, and no byte outside a known structure, every
// ZIP reader sees the same files.

const (
	localHeaderSig   = 0x04034b50
	centralHeaderSig = 0x02014b50
	endRecordSig     = 0x06054b50
	zip64LocatorSig  = 0x07064b50

	localHeaderLen   = 30
	centralHeaderLen = 46
	endRecordLen     = 22
	zip64LocatorLen  = 20

	methodStore   = 0
	methodDeflate = 8

	// Flags: bit 0 encrypted, bit 6 strong encryption, bit 13 encrypted
	// central directory; bits 1-2 only describe the deflate level, bit 11
	// says the name is UTF-8 (names are ASCII anyway). Everything else is
	// refused, bit 3 (data descriptor) included.
	flagsEncrypted = 0x0001 | 0x0040 | 0x2000
	flagsAllowed   = 0x0002 | 0x0004 | 0x0800

	maxVersionNeeded = 20 // 2.0: Deflate; zip64 needs 4.5

	hostMSDOS = 0
	hostUnix  = 3
)

// zipEntry is one entry as scanArchive read it.
type zipEntry struct {
	name         string
	flags        uint16
	method       uint16
	crc          uint32
	csize, usize int64
	offset       int64 // of the local header
	dataOffset   int64
	central      int64 // offset of the central record
}

func (e *zipEntry) end() int64 { return e.offset + localHeaderLen + int64(len(e.name)) + e.csize }

func le16(b []byte, off int64) uint16 { return binary.LittleEndian.Uint16(b[off:]) }
func le32(b []byte, off int64) uint32 { return binary.LittleEndian.Uint32(b[off:]) }

// scanArchive checks data's layout and every entry's header, and returns the
// entries in central directory order. It reads no entry's data.
func scanArchive(data []byte, lim Limits) ([]zipEntry, error) {
	n := int64(len(data))
	if n < endRecordLen {
		return nil, refuse(ReasonEndRecord, "", "%d bytes: shorter than an end record", n)
	}
	eocd := n - endRecordLen
	if le32(data, eocd) != endRecordSig {
		return nil, misplacedEnd(data)
	}
	var (
		disk        = le16(data, eocd+4)
		dirDisk     = le16(data, eocd+6)
		diskEntries = le16(data, eocd+8)
		count       = le16(data, eocd+10)
		dirSize     = int64(le32(data, eocd+12))
		dirOffset   = int64(le32(data, eocd+16))
		commentLen  = le16(data, eocd+20)
	)
	switch {
	case commentLen != 0:
		return nil, refuse(ReasonEndRecord, "", "end record declares a %d-byte comment after the end of the file", commentLen)
	case disk != 0 || dirDisk != 0 || diskEntries != count:
		return nil, refuse(ReasonUnsupported, "", "archive spans several disks")
	case count == 0xffff || dirSize == 0xffffffff || dirOffset == 0xffffffff:
		return nil, refuse(ReasonUnsupported, "", "zip64 end record")
	case int(count) > lim.Entries:
		return nil, refuse(ReasonTooManyEntries, "", "%d entries; the limit is %d", count, lim.Entries)
	}
	if le32(data, 0) != localHeaderSig {
		if count == 0 && n == endRecordLen && dirSize == 0 && dirOffset == 0 {
			return nil, nil // an empty archive: the statement's files will be missing
		}
		return nil, refuse(ReasonPrependedData, "", "the archive does not start with a local header")
	}
	dirEnd := dirOffset + dirSize
	switch {
	case dirEnd > eocd:
		return nil, refuse(ReasonEndRecord, "", "central directory [%d, %d) runs past the end record at %d", dirOffset, dirEnd, eocd)
	case dirEnd < eocd:
		if eocd >= zip64LocatorLen && le32(data, eocd-zip64LocatorLen) == zip64LocatorSig {
			return nil, refuse(ReasonUnsupported, "", "zip64 locator")
		}
		if shifted := eocd - dirSize; dirSize > 0 && le32(data, shifted) == centralHeaderSig {
			return nil, refuse(ReasonPrependedData, "", "offsets are short by %d bytes: data was put before the archive", shifted-dirOffset)
		}
		return nil, refuse(ReasonHiddenData, "", "%d bytes between the central directory and the end record", eocd-dirEnd)
	case int64(count)*centralHeaderLen > dirSize:
		return nil, refuse(ReasonCentralDirectory, "", "%d entries cannot fit in %d bytes", count, dirSize)
	}

	entries := make([]zipEntry, 0, count)
	names := make(map[string]bool, count)
	folded := make(map[string]string, count)
	var total int64
	pos := dirOffset
	for i := 0; i < int(count); i++ {
		if pos+centralHeaderLen > dirEnd || le32(data, pos) != centralHeaderSig {
			return nil, refuse(ReasonCentralDirectory, "", "record %d is not a central directory header", i)
		}
		var (
			made      = le16(data, pos+4)
			needed    = le16(data, pos+6)
			flags     = le16(data, pos+8)
			method    = le16(data, pos+10)
			crc       = le32(data, pos+16)
			csize     = int64(le32(data, pos+20))
			usize     = int64(le32(data, pos+24))
			nameLen   = int64(le16(data, pos+28))
			extraLen  = int64(le16(data, pos+30))
			comLen    = int64(le16(data, pos+32))
			diskStart = le16(data, pos+34)
			external  = le32(data, pos+38)
			offset    = int64(le32(data, pos+42))
		)
		next := pos + centralHeaderLen + nameLen + extraLen + comLen
		if next > dirEnd {
			return nil, refuse(ReasonCentralDirectory, "", "record %d runs past the central directory", i)
		}
		name := string(data[pos+centralHeaderLen : pos+centralHeaderLen+nameLen])
		if err := checkEntryType(name, made, external); err != nil {
			return nil, err
		}
		if err := checkPath(name); err != nil {
			return nil, err
		}
		if names[name] {
			return nil, refuse(ReasonDuplicate, name, "name appears twice")
		}
		if other, ok := folded[foldName(name)]; ok {
			return nil, refuse(ReasonCaseDuplicate, name, "collides with %q when case is folded", other)
		}
		names[name] = true
		folded[foldName(name)] = name
		switch {
		case flags&flagsEncrypted != 0:
			return nil, refuse(ReasonEncrypted, name, "encrypted (flags %#04x)", flags)
		case flags&0x0008 != 0:
			return nil, refuse(ReasonFlags, name, "data descriptor (flag 0x0008): sizes must be in the headers")
		case flags&^flagsAllowed != 0:
			return nil, refuse(ReasonFlags, name, "flags %#04x", flags)
		case method != methodStore && method != methodDeflate:
			return nil, refuse(ReasonMethod, name, "compression method %d; want Store (0) or Deflate (8)", method)
		case needed > maxVersionNeeded:
			return nil, refuse(ReasonUnsupported, name, "needs ZIP version %d.%d", needed/10, needed%10)
		case extraLen != 0:
			return nil, refuse(ReasonExtraField, name, "%d bytes of extra fields in the central directory", extraLen)
		case comLen != 0:
			return nil, refuse(ReasonComment, name, "entry comment")
		case diskStart != 0:
			return nil, refuse(ReasonUnsupported, name, "entry on another disk")
		case csize == 0xffffffff || usize == 0xffffffff || offset == 0xffffffff:
			return nil, refuse(ReasonUnsupported, name, "zip64 sizes")
		case usize > lim.FileBytes:
			return nil, refuse(ReasonFileTooLarge, name, "%d bytes; the limit is %d", usize, lim.FileBytes)
		}
		total += usize
		if total > lim.TotalBytes {
			return nil, refuse(ReasonTotalTooLarge, name, "files add up to more than %d bytes", lim.TotalBytes)
		}
		if method == methodStore && csize != usize {
			return nil, refuse(ReasonEntrySize, name, "stored entry of %d bytes declares %d uncompressed", csize, usize)
		}
		if method == methodDeflate && usize > csize*lim.Ratio {
			return nil, refuse(ReasonRatio, name, "%d bytes from %d: ratio over %d", usize, csize, lim.Ratio)
		}
		entries = append(entries, zipEntry{
			name: name, flags: flags, method: method, crc: crc,
			csize: csize, usize: usize, offset: offset,
			dataOffset: offset + localHeaderLen + nameLen, central: pos,
		})
		pos = next
	}
	if pos != dirEnd {
		return nil, refuse(ReasonHiddenData, "", "%d bytes in the central directory after its last record", dirEnd-pos)
	}
	if err := checkTiling(entries, dirOffset); err != nil {
		return nil, err
	}
	for i := range entries {
		if err := checkLocalHeader(data, &entries[i]); err != nil {
			return nil, err
		}
	}
	return entries, nil
}

// checkEntryType refuses everything but regular files: directories, links,
// devices, FIFOs, sockets, and set-id or sticky bits. Only MS-DOS and Unix
// attributes are understood.
func checkEntryType(name string, made uint16, external uint32) error {
	if len(name) > 0 && name[len(name)-1] == '/' {
		return refuse(ReasonNotRegular, name, "directory entry")
	}
	if external&0x18 != 0 { // MS-DOS directory or volume label
		return refuse(ReasonNotRegular, name, "MS-DOS attributes %#02x: directory or volume label", external&0xff)
	}
	switch made >> 8 {
	case hostMSDOS:
		return nil
	case hostUnix:
	default:
		return refuse(ReasonUnsupported, name, "attributes of host system %d", made>>8)
	}
	mode := external >> 16
	switch mode & 0xf000 {
	case 0, 0x8000:
	case 0xa000:
		return refuse(ReasonNotRegular, name, "symbolic link")
	case 0x4000:
		return refuse(ReasonNotRegular, name, "directory")
	default:
		return refuse(ReasonNotRegular, name, "special file (mode %#o)", mode)
	}
	if mode&0o7000 != 0 {
		return refuse(ReasonNotRegular, name, "set-id or sticky bits (mode %#o)", mode)
	}
	return nil
}

// checkTiling requires the entries' local headers and data to cover
// [0, dirOffset) exactly once, in any order.
func checkTiling(entries []zipEntry, dirOffset int64) error {
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b zipEntry) int {
		switch {
		case a.offset < b.offset:
			return -1
		case a.offset > b.offset:
			return 1
		}
		return 0
	})
	var at int64
	for i := range sorted {
		e := &sorted[i]
		switch {
		case e.offset < at:
			return refuse(ReasonOverlap, e.name, "entry at %d overlaps the previous one, which ends at %d", e.offset, at)
		case e.offset > at:
			return refuse(ReasonHiddenData, e.name, "%d bytes before the entry at %d belong to no entry", e.offset-at, e.offset)
		case e.end() > dirOffset:
			return refuse(ReasonOverlap, e.name, "entry [%d, %d) runs into the central directory at %d", e.offset, e.end(), dirOffset)
		}
		at = e.end()
	}
	if at != dirOffset {
		return refuse(ReasonHiddenData, "", "%d bytes between the last entry and the central directory", dirOffset-at)
	}
	return nil
}

// checkLocalHeader requires e's local header to repeat its central record:
// version needed, flags, method, time, date, CRC, sizes, name; no extra
// field.
func checkLocalHeader(data []byte, e *zipEntry) error {
	off, central := e.offset, e.central
	if le32(data, off) != localHeaderSig {
		return refuse(ReasonLocalHeader, e.name, "no local header at %d", off)
	}
	// Bytes 4..26 of a local header (version needed .. uncompressed size)
	// are bytes 6..28 of its central record.
	if !bytes.Equal(data[off+4:off+26], data[central+6:central+28]) {
		return refuse(ReasonLocalHeader, e.name, "local header fields differ from the central directory's")
	}
	nameLen, extraLen := int64(le16(data, off+26)), int64(le16(data, off+28))
	if nameLen != int64(len(e.name)) || string(data[off+localHeaderLen:off+localHeaderLen+nameLen]) != e.name {
		return refuse(ReasonLocalHeader, e.name, "local header names another file")
	}
	if extraLen != 0 {
		return refuse(ReasonExtraField, e.name, "%d bytes of extra fields in the local header", extraLen)
	}
	return nil
}

// misplacedEnd explains why the file does not end with an end record.
func misplacedEnd(data []byte) error {
	n := int64(len(data))
	lo := max(0, n-endRecordLen-0xffff)
	for p := n - endRecordLen - 1; p >= lo; p-- {
		if le32(data, p) != endRecordSig {
			continue
		}
		if p+endRecordLen+int64(le16(data, p+20)) == n {
			return refuse(ReasonComment, "", "archive comment of %d bytes", n-p-endRecordLen)
		}
		return refuse(ReasonTrailingData, "", "%d bytes after the end record", n-p-endRecordLen)
	}
	return refuse(ReasonEndRecord, "", "no end of central directory record at the end of the file")
}
