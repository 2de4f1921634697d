package client

import floev1 "github.com/floe-broker/floe/api/floe/v1"

// Admin returns the agent's AdminService (tokens, SCRAM users, ACLs).
func (c *Client) Admin() floev1.AdminServiceClient { return floev1.NewAdminServiceClient(c.conn) }
