package nettrace

import (
	"encoding/binary"
	"errors"
	"io"
)

// readV6Block reads one V6 block header and body.
func (r *Reader) readV6Block() (kind int, body []byte, err error) {
	start := r.off
	x, err := r.readU32("block header", "")
	if err != nil {
		var fe *FormatError
		if errors.As(err, &fe) && fe.Truncated() && r.off == start {
			fe.Msg = "expected the next block or the end-of-stream block"
		}
		return 0, nil, err
	}
	size := int(x & 0xFFFFFF)
	kind = int(x >> 24)
	if size > r.cfg.MaxBlockSize {
		return kind, nil, r.errAt(start, nil, "block of %d bytes exceeds the limit of %d", size, r.cfg.MaxBlockSize)
	}
	what := "unknown"
	if kind < len(v6BlockNames) {
		what = v6BlockNames[kind]
	}
	body, err = r.readBlock(size, what, " block")
	return kind, body, err
}

// ---------------------------------------------------------------------------
// block dispatch

// nextBlock reads blocks until an event block with data is current. It
// returns io.EOF after the end-of-stream marker.
func (r *Reader) nextBlock() error {
	if r.v6 {
		return r.nextBlockV6()
	}
	for {
		name, sz, ok := r.peekBlockHeader()
		if !ok {
			var err error
			if name, sz, err = r.readBlockHeader(); err != nil {
				return err
			}
		}
		boff := r.off
		body, rerr := r.readBlock(int(sz), name, "")
		r.stats.Blocks++
		if rerr != nil && name != objEventBlock {
			return rerr
		}
		var err error
		switch name {
		case objEventBlock:
			if r.netperf {
				r.startBlock(body, boff, false)
			} else if err := r.startEventBlock(body, boff, rerr); err != nil {
				return err
			}
			r.blkErr = rerr
			if rerr == nil {
				if err := r.expectEnd(name); err != nil {
					r.blkErr = err
				} else {
					r.goodEnd = r.off
				}
			}
			return nil
		case objMetadataBlock:
			err = r.parseMetadataBlock(body, boff)
		case objStackBlock:
			err = r.parseStackBlock(body, boff)
		case objSPBlock:
			err = r.parseSPBlockV4(body, boff)
		}
		if err != nil {
			return err
		}
		if err := r.expectEnd(name); err != nil {
			return err
		}
		r.goodEnd = r.off
	}
}

// peekBlockHeader reads the header of a well-formed V4 block (object and
// type tags, version, type name, size, padding) from the read buffer in one
// step, when the buffer holds it. It returns ok false, having consumed
// nothing, when it does not or anything is unusual; readBlockHeader then
// reads the header piece by piece and says what is wrong.
func (r *Reader) peekBlockHeader() (name string, size uint32, ok bool) {
	const fixed = 15 // object tag, type tags, version, minimum version, name length
	// The first byte is needed anyway (this may wait for it, as reading
	// piece by piece would); then only what the buffer holds.
	if _, err := r.br.Peek(1); err != nil {
		return "", 0, false
	}
	b, _ := r.br.Peek(min(r.br.Buffered(), 64))
	if len(b) < fixed || (b[0] != tagBeginObject && b[0] != tagBeginPrivateObject) ||
		(b[1] != tagBeginObject && b[1] != tagBeginPrivateObject) || b[2] != tagNullReference {
		return "", 0, false
	}
	n := int(binary.LittleEndian.Uint32(b[11:]))
	if n < len("SPBlock") || n > len("MetadataBlock") || len(b) < fixed+n+5 {
		return "", 0, false
	}
	switch string(b[fixed : fixed+n]) {
	case objEventBlock:
		name = objEventBlock
	case objMetadataBlock:
		name = objMetadataBlock
	case objStackBlock:
		name = objStackBlock
	case objSPBlock:
		name = objSPBlock
	default:
		return "", 0, false
	}
	if b[fixed+n] != tagEndObject {
		return "", 0, false
	}
	size = binary.LittleEndian.Uint32(b[fixed+n+1:])
	end := r.off + int64(fixed+n+5)
	pad := int((4 - end%4) % 4)
	if int64(int32(size)) < 0 || int(size) > r.cfg.MaxBlockSize || len(b) < fixed+n+5+pad {
		return "", 0, false
	}
	k := fixed + n + 5 + pad
	r.br.Discard(k) // buffered: cannot fail
	r.off += int64(k)
	return name, size, true
}

// readBlockHeader reads a V4 block header piece by piece, checking each.
func (r *Reader) readBlockHeader() (string, uint32, error) {
	start := r.off
	name, _, err := r.readObjectHeader()
	if err == io.EOF {
		r.done = true
		r.stats.Complete = true
		return "", 0, io.EOF
	}
	if err != nil {
		return "", 0, err
	}
	switch name {
	case objEventBlock, objMetadataBlock, objStackBlock, objSPBlock:
	case objTrace:
		return "", 0, r.errAt(start, nil, "a second Trace object in the stream")
	default:
		return "", 0, r.errAt(start, nil, "unknown object type %q; expected EventBlock, MetadataBlock, StackBlock or SPBlock", name)
	}
	sz, err := r.readU32(name, " size")
	if err != nil {
		return "", 0, err
	}
	if int64(int32(sz)) < 0 || int(sz) > r.cfg.MaxBlockSize {
		return "", 0, r.errAt(r.off-4, nil, "%s size %d is out of range (0..%d)", name, int32(sz), r.cfg.MaxBlockSize)
	}
	if pad := int((4 - r.off%4) % 4); pad > 0 {
		if err := r.skip(pad, name, " padding"); err != nil {
			return "", 0, err
		}
	}
	return name, sz, nil
}

func (r *Reader) nextBlockV6() error {
	for {
		start := r.off
		kind, body, rerr := r.readV6Block()
		if rerr != nil && (kind != v6Event || body == nil) {
			return rerr
		}
		r.stats.Blocks++
		if rerr == nil {
			r.goodEnd = r.off
		}
		boff := start + 4
		var err error
		switch kind {
		case v6EndOfStream:
			r.done = true
			r.stats.Complete = true
			return io.EOF
		case v6Event:
			if err := r.startEventBlock(body, boff, rerr); err != nil {
				return err
			}
			r.blkErr = rerr
			return nil
		case v6Metadata:
			err = r.parseMetadataBlockV6(body, boff)
		case v6SequencePoint:
			err = r.parseSPBlockV6(body, boff)
		case v6Stack:
			err = r.parseStackBlock(body, boff)
		case v6Thread:
			err = r.parseThreadBlock(body, boff)
		case v6RemoveThread:
			err = r.parseRemoveThreadBlock(body, boff)
		case v6LabelList:
			err = r.parseLabelListBlock(body, boff)
		case v6Trace:
			err = r.errAt(start, nil, "a second Trace block in the stream")
		default:
			// Unknown kinds are skipped, as the format requires.
		}
		if err != nil {
			return err
		}
	}
}

// startEventBlock checks an event/metadata block header and makes the
// block's events current.
// truncErr is the read error when b is only the start of a cut block.
func (r *Reader) startEventBlock(b []byte, off int64, truncErr error) error {
	if len(b) < blockHeaderMinSize {
		if truncErr != nil {
			return truncErr
		}
		return r.errAt(off, nil, "event block of %d bytes is shorter than its %d-byte header", len(b), blockHeaderMinSize)
	}
	hs := int(binary.LittleEndian.Uint16(b))
	if hs > len(b) && hs >= blockHeaderMinSize && truncErr != nil {
		return truncErr
	}
	if hs < blockHeaderMinSize || hs > len(b) {
		return r.errAt(off, nil, "event block header size %d is out of range (%d..%d)", hs, blockHeaderMinSize, len(b))
	}
	flags := binary.LittleEndian.Uint16(b[2:])
	r.startBlock(b[hs:], off+int64(hs), flags&blockFlagCompressed != 0)
	return nil
}

func (r *Reader) startBlock(b []byte, off int64, compressed bool) {
	r.blk, r.blkOff, r.pos, r.compressed = b, off, 0, compressed
	r.st = evState{}
	r.blkErr = nil
}

// ---------------------------------------------------------------------------
// events
