package auth

import "testing"

func TestCryptMatchesOtherImplementations(t *testing.T) {
	// Hashes made by `openssl passwd` and by Apache's htpasswd.
	cases := []struct{ password, hash string }{
		{"pa$$word", "$1$saltsalt$MIiVGIRRvdnz62g8sGAhi1"},
		{"pa$$word", "$apr1$saltsalt$7077GHhuoZPh3jzNRsrBd1"},
		{"pa$$word", "$5$saltsalt$qcUiXqm3ArYJMFRoCtAmg.gYgtKftkSVnTO9CdT8VA."},
		{"pa$$word", "$6$saltsalt$hjQoA4wh3eEtPIQF/gT0rptx7t.JxzuSc3pdIo/MlHmVbE802A6w.bIp7reHtAuXokUjEd6TadYHGzu3fR8e9."},
		{"x", "$5$rounds=1000$abc$UxKib5kobt2BZp/yfOEWbjik.BPMiS9MzbXyO6zXMC0"},
		{"", "$1$ab$rn6aQS/o7141mj179E/zA."},
		{"123456", "$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf."},
	}
	for _, c := range cases {
		got, err := Crypt(c.password, c.hash)
		if err != nil || got != c.hash {
			t.Errorf("Crypt(%q, %q) = %q, %v", c.password, c.hash, got, err)
		}
	}
}

func TestHtpasswdChecksUsersAndPasswords(t *testing.T) {
	h, err := ParseHtpasswd([]byte("# users\nadmin:$apr1$FG4AO6aX$KGYPuMoLUou3i6vUkPUUf.\n\nops:$6$saltsalt$hjQoA4wh3eEtPIQF/gT0rptx7t.JxzuSc3pdIo/MlHmVbE802A6w.bIp7reHtAuXokUjEd6TadYHGzu3fR8e9.\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		user, pass string
		ok         bool
	}{
		{"admin", "123456", true}, {"admin", "1234567", false}, {"ops", "pa$$word", true},
		{"ops", "123456", false}, {"nobody", "123456", false}, {"", "", false},
	} {
		if got := h.Check(c.user, c.pass); got != c.ok {
			t.Errorf("Check(%q, %q) = %v", c.user, c.pass, got)
		}
	}
}

func TestParseHtpasswdRefusesWhatItCannotCheck(t *testing.T) {
	for _, bad := range []string{"admin", "admin:plain", "admin:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=", "admin:$2y$05$abc", ":$1$ab$x"} {
		if _, err := ParseHtpasswd([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
