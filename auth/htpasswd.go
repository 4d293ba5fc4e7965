package auth

import (
	"crypto/md5"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
)

// Htpasswd holds the users of an htpasswd file, the user list of Pulsar's
// AuthenticationProviderBasic. It takes the hashes Pulsar 4.0 checks: Apache
// MD5 ($apr1$, `htpasswd -m`) and traditional DES crypt (`htpasswd -d`).
// Pulsar loads other hashes (MD5-crypt $1$, SHA-crypt $5$ and $6$, bcrypt)
// and never matches them; ParseHtpasswd refuses them instead, so that such a
// file fails at start rather than at every login.
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
	if strings.HasPrefix(h, "$apr1$") {
		return true
	}
	if len(h) != 13 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if indexCrypt64(h[i]) < 0 {
			return false
		}
	}
	return true
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

// Crypt hashes password with the scheme and salt of setting (an existing hash,
// "$apr1$salt" or a two-character DES salt), as Apache's htpasswd does.
func Crypt(password, setting string) (string, error) {
	if rest, ok := strings.CutPrefix(setting, "$apr1$"); ok {
		return md5Crypt(password, "$apr1$", rest), nil
	}
	if h, ok := desCrypt(password, setting); ok && !strings.HasPrefix(setting, "$") {
		return h, nil
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

// md5Crypt is Poul-Henning Kamp's MD5 crypt with Apache's magic string.
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
