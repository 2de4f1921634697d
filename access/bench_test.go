package access_test

import (
	"fmt"
	"testing"

	"github.com/floe-broker/floe/access"
	"github.com/floe-broker/floe/access/accesstest"
	"github.com/floe-broker/floe/auth"
)

// BenchmarkAuthorize is the cost of one request's ACL check through the
// Guard with 10 and with 1,000 ACLs (principals × 10 topics), the allowed
// entry last: auth.Authorize scans them all. Compare the two (the machine
// is shared): the cost grows with the ACLs scanned.
func BenchmarkAuthorize(b *testing.B) {
	for _, users := range []int{1, 100} {
		b.Run(fmt.Sprintf("acls=%d", users*10), func(b *testing.B) {
			store := accesstest.NewStore()
			for u := range users {
				for tp := range 10 {
					store.Allow(fmt.Sprintf("User:u%d", u), auth.OpRead, auth.Topic(fmt.Sprintf("topic-%d", tp)))
				}
			}
			cfg := access.DefaultConfig()
			cfg.Enabled = true
			g, err := access.NewGuard(cfg, store, access.GuardOptions{})
			if err != nil {
				b.Fatal(err)
			}
			p, res := auth.Principal{Name: fmt.Sprintf("u%d", users-1)}, auth.Topic("topic-9")
			b.ReportAllocs()
			for b.Loop() {
				if !g.Allowed("grpc", p, auth.OpRead, res) {
					b.Fatal("denied")
				}
			}
		})
	}
}
