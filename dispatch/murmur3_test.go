package dispatch

import "testing"

func TestMurmur3MatchesKnownVectors(t *testing.T) {
	cases := []struct {
		in   string
		seed uint32
		want uint32
	}{
		{"", 0, 0},
		{"", 1, 0x514e28b7},
		{"", 0xffffffff, 0x81f16f39},
		{"\x00\x00\x00\x00", 0, 0x2362f9de},
		{"hello", 0, 0x248bfa47},
		{"test", 0, 0xba6bd213},
		{"Hello, world!", 0, 0xc0363e43},
		{"The quick brown fox jumps over the lazy dog", 0, 0x2e4ff723},
		{"aaaa", 0x9747b28c, 0x5a97808a},
		{"abc", 0, 0xb3dd93fa},
		{"Hello, world!", 0x9747b28c, 0x24884cba},
	}
	for _, c := range cases {
		if got := murmur3([]byte(c.in), c.seed); got != c.want {
			t.Errorf("murmur3(%q, %#x) = %#x, want %#x", c.in, c.seed, got, c.want)
		}
	}
}

func TestMurmur31IsNonNegative(t *testing.T) {
	// "hello" hashes to 0x248bfa47 (top bit clear); find a key with the top bit
	// set and check the mask.
	for i := 0; i < 100; i++ {
		k := []byte{byte(i), 'k'}
		raw := murmur3(k, 0)
		if got := Murmur31(k); got != int32(raw&0x7fffffff) || got < 0 {
			t.Fatalf("Murmur31(%q) = %d, raw %#x", k, got, raw)
		}
	}
}

func TestStickyKeyHashReducesPerSelector(t *testing.T) {
	for i := 0; i < 2000; i++ {
		k := []byte{byte(i), byte(i >> 8), 'x'}
		m := Murmur31(k)
		if got, want := StickyKeyHash(AutoSplit, k), m%65535+1; got != want {
			t.Fatalf("AUTO_SPLIT hash of %q = %d, want %d", k, got, want)
		}
		want := m % 65536
		if want == 0 {
			want = 1
		}
		if got := StickyKeyHash(Sticky, k); got != want {
			t.Fatalf("STICKY hash of %q = %d, want %d", k, got, want)
		}
	}
}
