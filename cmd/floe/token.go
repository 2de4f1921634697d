package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
)

var tokenCommands = map[string]subSpec{
	"create": {"", `Create a bearer token for -principal, valid for -ttl (0: never expires). The
token is printed once, on stdout, and never stored: the agents keep only its
SHA-256. Present it as "authorization: Bearer <token>".`, 0},
	"list":   {"", "List the tokens: id, principal, creation, expiry and state (never the secret).", 0},
	"revoke": {"ID", "Revoke the token of ID (as listed); agents refuse it within their token refresh period.", 1},
}

const tokenUsage = `usage: floe token create|list|revoke [flags] [ID]

Manage bearer tokens. Run 'floe token SUBCOMMAND -h' for a subcommand's flags.
`

func runToken(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, cmd, err := subcommand("token", tokenUsage, tokenCommands, []string{"create", "list", "revoke"}, args, stdout)
	if err != nil {
		return err
	}
	fs := cmd.fs
	addr := addrFlag(fs)
	var principal *string
	var ttl *time.Duration
	output := new(string)
	var direct tokenStoreFlags
	switch sub {
	case "create":
		principal = fs.String("principal", "", "the token's principal, User:NAME (required)")
		ttl = fs.Duration("ttl", 720*time.Hour, "how long the token is valid (0: never expires)")
		output = outputFlag(fs)
		direct = tokenStoreFlags{store: fs.String("store", "", "bootstrap: write the token straight into this PostgreSQL metadata store `URL` (postgres://…), no agent and no token needed: the first admin's bootstrap"),
			data: fs.String("data", "", "bootstrap: write the token straight into floe dev's SQLite metadata store in this data `folder`")}
	case "list":
		output = outputFlag(fs)
	}
	pos, err := cmd.parse(args[1:], stdout)
	if err != nil {
		return err
	}
	if *output != "" {
		if err := checkOutput(*output); err != nil {
			return err
		}
	}
	if sub == "create" {
		if *principal == "" {
			return errRequired(cmd, "principal")
		}
		if *ttl < 0 {
			return fmt.Errorf("token create: flag -ttl: %v is negative (0: never expires)", *ttl)
		}
	}
	if sub == "create" && direct.direct() {
		if *output == "json" {
			return fmt.Errorf("token create: flag -o: json is not offered with -store or -data")
		}
		return direct.createTokenInStore(ctx, *principal, *ttl, stdout, stderr)
	}
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	a := c.Admin()
	switch sub {
	case "create":
		resp, err := a.CreateToken(ctx, &floev1.CreateTokenRequest{Principal: *principal, TtlMs: ttl.Milliseconds()})
		if err != nil {
			return fmt.Errorf("create token: %w", err)
		}
		if *output == "json" {
			return printProtoJSON(stdout, resp)
		}
		fmt.Fprintln(stdout, resp.GetToken())
		fmt.Fprintf(stderr, "token %s for %s, expires %s; it is shown only this once\n",
			resp.GetInfo().GetId(), resp.GetInfo().GetPrincipal(), formatExpiry(resp.GetInfo().GetExpiresAtMs()))
	case "list":
		resp, err := a.ListTokens(ctx, &floev1.ListTokensRequest{})
		if err != nil {
			return fmt.Errorf("list tokens: %w", err)
		}
		if *output == "json" {
			return printProtoJSON(stdout, resp)
		}
		now := time.Now()
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tPRINCIPAL\tCREATED\tEXPIRES\tSTATE")
		for _, t := range resp.GetTokens() {
			state := "active"
			switch {
			case t.GetRevoked():
				state = "revoked"
			case t.GetExpiresAtMs() != 0 && now.UnixMilli() >= t.GetExpiresAtMs():
				state = "expired"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.GetId(), t.GetPrincipal(),
				time.UnixMilli(t.GetCreatedAtMs()).UTC().Format(time.RFC3339), formatExpiry(t.GetExpiresAtMs()), state)
		}
		return tw.Flush()
	case "revoke":
		if _, err := a.RevokeToken(ctx, &floev1.RevokeTokenRequest{Id: pos[0]}); err != nil {
			return fmt.Errorf("revoke token %s: %w", pos[0], err)
		}
		fmt.Fprintf(stdout, "revoked token %s\n", pos[0])
	}
	return nil
}

func formatExpiry(ms int64) string {
	if ms == 0 {
		return "never"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}
