package auth

import (
	"bytes"
	"crypto/md5"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// Htpasswd holds the users of an htpasswd file, the user list of Pulsar's
// AuthenticationProviderBasic. It accepts the hashes Pulsar checks: Apache
// MD5 ($apr1$) and the crypt(3) schemes MD5 ($1$), SHA-256 ($5$) and SHA-512
// ($6$). Traditional DES crypt is not supported.
type Htpasswd map[string]string

// ParseHtpasswd reads "user:hash" lines; blank lines and lines starting with
// '#' are skipped.
func ParseHtpasswd(data []byte) (Htpasswd, error) {
	h := Htpasswd{}
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, hashed, ok := strings.Cut(line, ":")
		if !ok || user == "" {
			return nil, fmt.Errorf("auth: htpasswd line %d: want user:hash", n+1)
		}
		if !supportedHash(hashed) {
			return nil, fmt.Errorf("auth: htpasswd line %d: unsupported hash for %q", n+1, user)
		}
		h[user] = hashed
	}
	return h, nil
}

func supportedHash(h string) bool {
	for _, p := range []string{"$apr1$", "$1$", "$5$", "$6$"} {
		if strings.HasPrefix(h, p) {
			return true
		}
	}
	return false
}

// Check reports whether password is user's password.
func (h Htpasswd) Check(user, password string) bool {
	stored, ok := h[user]
	if !ok {
		return false
	}
	got, err := Crypt(password, stored)
	return err == nil && subtle.ConstantTimeCompare([]byte(got), []byte(stored)) == 1
}

// Crypt hashes password with the scheme and salt of setting (an existing hash
// or "$id$salt"), as crypt(3) and Apache's htpasswd do.
func Crypt(password, setting string) (string, error) {
	switch {
	case strings.HasPrefix(setting, "$apr1$"):
		return md5Crypt(password, "$apr1$", setting[len("$apr1$"):]), nil
	case strings.HasPrefix(setting, "$1$"):
		return md5Crypt(password, "$1$", setting[len("$1$"):]), nil
	case strings.HasPrefix(setting, "$5$"):
		return shaCrypt(password, setting[3:], "$5$", sha256.New, sha256Order)
	case strings.HasPrefix(setting, "$6$"):
		return shaCrypt(password, setting[3:], "$6$", sha512.New, sha512Order)
	}
	return "", errors.New("auth: unsupported password hash")
}

const crypt64 = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// append64 appends n characters of the 24-bit value b2 b1 b0, low bits first.
func append64(dst []byte, b2, b1, b0 byte, n int) []byte {
	w := uint(b2)<<16 | uint(b1)<<8 | uint(b0)
	for ; n > 0; n-- {
		dst = append(dst, crypt64[w&0x3f])
		w >>= 6
	}
	return dst
}

// md5Crypt is Poul-Henning Kamp's MD5 crypt; Apache's variant differs only
// in its magic string.
func md5Crypt(password, magic, rest string) string {
	salt, _, _ := strings.Cut(rest, "$")
	if len(salt) > 8 {
		salt = salt[:8]
	}
	pw := []byte(password)
	alt := md5.Sum([]byte(password + salt + password))
	ctx := md5.New()
	ctx.Write([]byte(password + magic + salt))
	for i := len(pw); i > 0; i -= 16 {
		ctx.Write(alt[:min(16, i)])
	}
	for i := len(pw); i != 0; i >>= 1 {
		if i&1 != 0 {
			ctx.Write([]byte{0})
		} else {
			ctx.Write(pw[:1])
		}
	}
	final := ctx.Sum(nil)
	for i := 0; i < 1000; i++ {
		c := md5.New()
		if i&1 != 0 {
			c.Write(pw)
		} else {
			c.Write(final)
		}
		if i%3 != 0 {
			c.Write([]byte(salt))
		}
		if i%7 != 0 {
			c.Write(pw)
		}
		if i&1 != 0 {
			c.Write(final)
		} else {
			c.Write(pw)
		}
		final = c.Sum(nil)
	}
	out := []byte(magic + salt + "$")
	for _, g := range [][3]int{{0, 6, 12}, {1, 7, 13}, {2, 8, 14}, {3, 9, 15}, {4, 10, 5}} {
		out = append64(out, final[g[0]], final[g[1]], final[g[2]], 4)
	}
	return string(append64(out, 0, 0, final[11], 2))
}

// The byte order in which SHA-crypt encodes its digest, three bytes at a time.
var (
	sha256Order = [][3]int{{0, 10, 20}, {21, 1, 11}, {12, 22, 2}, {3, 13, 23}, {24, 4, 14},
		{15, 25, 5}, {6, 16, 26}, {27, 7, 17}, {18, 28, 8}, {9, 19, 29}, {-1, 31, 30}}
	sha512Order = [][3]int{{0, 21, 42}, {22, 43, 1}, {44, 2, 23}, {3, 24, 45}, {25, 46, 4},
		{47, 5, 26}, {6, 27, 48}, {28, 49, 7}, {50, 8, 29}, {9, 30, 51}, {31, 52, 10},
		{53, 11, 32}, {12, 33, 54}, {34, 55, 13}, {56, 14, 35}, {15, 36, 57}, {37, 58, 16},
		{59, 17, 38}, {18, 39, 60}, {40, 61, 19}, {62, 20, 41}, {-1, -1, 63}}
)

// shaCrypt is Ulrich Drepper's SHA-256/SHA-512 crypt.
func shaCrypt(password, rest, magic string, newHash func() hash.Hash, order [][3]int) (string, error) {
	rounds, explicit := 5000, false
	if r, ok := strings.CutPrefix(rest, "rounds="); ok {
		num, after, found := strings.Cut(r, "$")
		n, err := strconv.Atoi(num)
		if !found || err != nil {
			return "", errors.New("auth: bad rounds in SHA-crypt hash")
		}
		rounds, explicit, rest = min(max(n, 1000), 999999999), true, after
	}
	salt, _, _ := strings.Cut(rest, "$")
	if len(salt) > 16 {
		salt = salt[:16]
	}
	pw, sb := []byte(password), []byte(salt)
	sum := func(parts ...[]byte) []byte {
		h := newHash()
		for _, p := range parts {
			h.Write(p)
		}
		return h.Sum(nil)
	}
	b := sum(pw, sb, pw)
	a := newHash()
	a.Write(pw)
	a.Write(sb)
	a.Write(repeatTo(b, len(pw)))
	for i := len(pw); i > 0; i >>= 1 {
		if i&1 != 0 {
			a.Write(b)
		} else {
			a.Write(pw)
		}
	}
	c := a.Sum(nil)
	p := repeatTo(sum(bytes.Repeat(pw, len(pw))), len(pw))
	s := repeatTo(sum(bytes.Repeat(sb, 16+int(c[0]))), len(sb))
	for i := 0; i < rounds; i++ {
		h := newHash()
		if i&1 != 0 {
			h.Write(p)
		} else {
			h.Write(c)
		}
		if i%3 != 0 {
			h.Write(s)
		}
		if i%7 != 0 {
			h.Write(p)
		}
		if i&1 != 0 {
			h.Write(c)
		} else {
			h.Write(p)
		}
		c = h.Sum(nil)
	}
	out := []byte(magic)
	if explicit {
		out = append(out, "rounds="+strconv.Itoa(rounds)+"$"...)
	}
	out = append(out, salt+"$"...)
	at := func(i int) byte {
		if i < 0 {
			return 0
		}
		return c[i]
	}
	for _, g := range order {
		n := 4
		switch {
		case g[0] < 0 && g[1] < 0:
			n = 2
		case g[0] < 0:
			n = 3
		}
		out = append64(out, at(g[0]), at(g[1]), at(g[2]), n)
	}
	return string(out), nil
}

// repeatTo returns n bytes made of b repeated.
func repeatTo(b []byte, n int) []byte {
	out := make([]byte, 0, n)
	for len(out) < n {
		out = append(out, b[:min(len(b), n-len(out))]...)
	}
	return out
}
