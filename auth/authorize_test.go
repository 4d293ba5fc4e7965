package auth

import "testing"

func TestAuthorizerFollowsSuperUsersAdminsAndGrants(t *testing.T) {
	a := &Authorizer{SuperUsers: []string{"admin", "superUser"}}
	p := TopicPolicy{
		TenantAdmins: []string{"tenant-admin"},
		Namespace:    Grants{"producer": {ActionProduce}, "both": {ActionProduce, ActionConsume}},
		Topic:        Grants{"reader": {ActionConsume}},
	}
	cases := []struct {
		role string
		op   Operation
		ok   bool
	}{
		{"admin", OpAdmin, true}, {"admin", OpProduce, true},
		{"tenant-admin", OpAdmin, true}, {"tenant-admin", OpConsume, true},
		{"producer", OpProduce, true}, {"producer", OpConsume, false}, {"producer", OpLookup, true},
		{"reader", OpConsume, true}, {"reader", OpProduce, false}, {"reader", OpLookup, true},
		{"both", OpAdmin, false},
		{"stranger", OpLookup, false}, {"stranger", OpProduce, false},
		{"", OpLookup, false},
	}
	for _, c := range cases {
		if got := a.Allowed(c.role, p, c.op); got != c.ok {
			t.Errorf("Allowed(%q, %v) = %v", c.role, c.op, got)
		}
	}
	if a.IsTenantAdmin("producer", p.TenantAdmins) || !a.IsTenantAdmin("superUser", nil) {
		t.Error("tenant admin rule")
	}
}
