package auth

import "testing"

func TestCryptMatchesOtherImplementations(t *testing.T) {
	// Hashes made by `openssl passwd -apr1`, Apache's htpasswd and the C
	// library's crypt(3).
	cases := []struct{ password, hash string }{
		{"pa$$word", "$apr1$saltsalt$7077GHhuoZPh3jzNRsrBd1"},
		{"123456", "$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf."},
		{"pw", "abzlUXK5ed5rs"},
		{"123456", "..i7W.Ia4DgGQ"},
		{"password", "zzXUHfURnGg8I"},
		{"a-very-long-password", "AbfqD/FUTTpZ2"}, // DES reads eight characters
		{"", "./Una9Fi.seRo"},
		{"ümlaut", "9ZXtV4mSsNvlY"},
	}
	for _, c := range cases {
		got, err := Crypt(c.password, c.hash)
		if err != nil || got != c.hash {
			t.Errorf("Crypt(%q, %q) = %q, %v", c.password, c.hash, got, err)
		}
	}
}

func TestHtpasswdChecksUsersAndPasswords(t *testing.T) {
	h, err := ParseHtpasswd([]byte("# users\nadmin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.\n\nops:zzXUHfURnGg8I\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		user, pass string
		ok         bool
	}{
		{"admin", "123456", true}, {"admin", "1234567", false}, {"ops", "password", true}, {"ops", "password-and-more", true},
		{"ops", "123456", false}, {"nobody", "123456", false}, {"", "", false},
	} {
		if got := h.Check(c.user, c.pass); got != c.ok {
			t.Errorf("Check(%q, %q) = %v", c.user, c.pass, got)
		}
	}
}

func TestParseHtpasswdRefusesWhatItCannotCheck(t *testing.T) {
	// Pulsar 4.0.8 never matches MD5-crypt, SHA-crypt or bcrypt hashes.
	for _, bad := range []string{"admin", "admin:plain", "admin:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=", "admin:$2y$05$abc",
		":zzXUHfURnGg8I", "md5:$1$abcdefgh$IQtUouv7y7Q9dRWkQEPCc.", "sha:$5$abcdefgh$ijtOJ//yvc/9bq1g0llFn9dB688BwBDRD90DlKKSKE1"} {
		if _, err := ParseHtpasswd([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
