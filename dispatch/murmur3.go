package dispatch

import "encoding/binary"

// murmur3 returns MurmurHash3 x86 32-bit of data with the given seed, as
// Pulsar's Murmur3_32Hash computes it before masking.
func murmur3(data []byte, seed uint32) uint32 {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	h := seed
	n := len(data)
	i := 0
	for ; i+4 <= n; i += 4 {
		k := binary.LittleEndian.Uint32(data[i:])
		k *= c1
		k = k<<15 | k>>17
		k *= c2
		h ^= k
		h = h<<13 | h>>19
		h = h*5 + 0xe6546b64
	}
	var k uint32
	switch n & 3 {
	case 3:
		k ^= uint32(data[i+2]) << 16
		fallthrough
	case 2:
		k ^= uint32(data[i+1]) << 8
		fallthrough
	case 1:
		k ^= uint32(data[i])
		k *= c1
		k = k<<15 | k>>17
		k *= c2
		h ^= k
	}
	h ^= uint32(n)
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// Murmur31 returns Pulsar's sticky-key base hash of key: Murmur3 x86 32-bit,
// seed 0, masked with 0x7fffffff.
func Murmur31(key []byte) int32 { return int32(murmur3(key, 0) & 0x7fffffff) }

// StickyKeyHash returns the hash a Pulsar 4.0 Key_Shared selector of the given
// mode gives key (PIP-379, StickyKeyConsumerSelectorUtils): the consistent-hash
// selector (AUTO_SPLIT) uses Murmur31 % 65535 + 1, within 1..65535; the STICKY
// range selector uses Murmur31 % 65536, within 0..65535, except that 0 (the
// "not set" marker) becomes 1.
func StickyKeyHash(mode KeySharedMode, key []byte) int32 {
	h := Murmur31(key)
	if mode == Sticky {
		h %= 65536
	} else {
		h = h%65535 + 1
	}
	if h == 0 {
		h = 1
	}
	return h
}
