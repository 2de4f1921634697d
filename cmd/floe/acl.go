package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	floev1 "github.com/floe-broker/floe/api/floe/v1"
	"github.com/floe-broker/floe/auth"
	"github.com/floe-broker/floe/auth/authpb"
)

var aclCommands = map[string]subSpec{
	"add": {"", `Add ACLs (Kafka's model): -principal may do -operation (comma-separated, or
repeated) on one resource: -topic T, -group G, -transactional-id X or
-cluster; the name is literal ("*": every resource of the type) unless
-prefixed. -deny makes deny entries, which win over any allow. Adding an
entry that exists changes nothing.`, 0},
	"list": {"", `List ACLs; the flags filter (each one given must match): -principal,
-topic/-group/-transactional-id NAME or -cluster, -resource-type,
-prefixed or -literal, -operation, -allow or -deny.`, 0},
	"remove": {"", `Remove the ACLs the flags select (as for list) and print them. With no
filter at all it is refused, unless -all.`, 0},
}

const aclUsage = `usage: floe acl add|list|remove [flags]

Manage ACLs. Run 'floe acl SUBCOMMAND -h' for a subcommand's flags.
`

// aclFlags are the flags of add and of the filters of list and remove.
type aclFlags struct {
	principal, topic, group, txnID, resourceType, host *string
	operations                                         listFlag
	cluster, prefixed, literal, deny, allow, all       *bool
}

func addACLFlags(fs *flag.FlagSet, sub string) *aclFlags {
	f := &aclFlags{
		principal: fs.String("principal", "", "User:NAME, or User:* for every principal"),
		topic:     fs.String("topic", "", "a topic's name (or prefix with -prefixed)"),
		group:     fs.String("group", "", "a consumer group's name (or prefix)"),
		txnID:     fs.String("transactional-id", "", "a transactional id (or prefix)"),
		cluster:   fs.Bool("cluster", false, "the cluster (admin operations: ALTER on it calls the admin service)"),
		prefixed:  fs.Bool("prefixed", false, "the name is a prefix"),
		deny:      fs.Bool("deny", false, "a deny entry (it wins over any allow)"),
	}
	fs.Var(&f.operations, "operation", "read, write, create, delete, alter, describe, describe_configs, alter_configs or all (comma-separated or repeated)")
	if sub == "add" {
		f.host = fs.String("host", "*", `host the entry applies to (only "*" is supported)`)
	} else {
		f.resourceType = fs.String("resource-type", "", "topic, group, cluster or transactional_id")
		f.literal = fs.Bool("literal", false, "only literal names")
		f.allow = fs.Bool("allow", false, "only allow entries")
	}
	if sub == "remove" {
		f.all = fs.Bool("all", false, "with no filter: remove every ACL")
	}
	return f
}

// resource returns the one resource flag given: its type and name.
func (f *aclFlags) resource() (auth.ResourceType, string, error) {
	var rt auth.ResourceType
	var name string
	n := 0
	for _, r := range []struct {
		t    auth.ResourceType
		name string
		set  bool
	}{
		{auth.ResourceTopic, *f.topic, *f.topic != ""},
		{auth.ResourceGroup, *f.group, *f.group != ""},
		{auth.ResourceTransactionalID, *f.txnID, *f.txnID != ""},
		{auth.ResourceCluster, auth.ClusterName, *f.cluster},
	} {
		if r.set {
			rt, name, n = r.t, r.name, n+1
		}
	}
	if n > 1 {
		return 0, "", fmt.Errorf("flags -topic, -group, -transactional-id and -cluster exclude each other")
	}
	if f.resourceType != nil && *f.resourceType != "" {
		t, err := auth.ParseResourceType(*f.resourceType)
		if err != nil {
			return 0, "", fmt.Errorf("flag -resource-type: %q is not topic, group, cluster or transactional_id", *f.resourceType)
		}
		if n == 1 && t != rt {
			return 0, "", fmt.Errorf("flag -resource-type %s contradicts the resource flag", *f.resourceType)
		}
		rt = t
	}
	return rt, name, nil
}

func (f *aclFlags) ops() ([]auth.Operation, error) {
	var out []auth.Operation
	for _, s := range f.operations {
		op, err := auth.ParseOperation(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("flag -operation: %q is not read, write, create, delete, alter, describe, describe_configs, alter_configs or all", s)
		}
		out = append(out, op)
	}
	return out, nil
}

// add builds the ACLs of acl add.
func (f *aclFlags) add(cmd *command) ([]*floev1.Acl, error) {
	if *f.principal == "" {
		return nil, errRequired(cmd, "principal")
	}
	rt, name, err := f.resource()
	if err != nil {
		return nil, fmt.Errorf("acl add: %w", err)
	}
	if rt == auth.ResourceUnknown {
		return nil, fmt.Errorf("acl add: a resource is required: -topic, -group, -transactional-id or -cluster (see 'floe acl add -h')")
	}
	ops, err := f.ops()
	if err != nil {
		return nil, fmt.Errorf("acl add: %w", err)
	}
	if len(ops) == 0 {
		return nil, errRequired(cmd, "operation")
	}
	pt, perm := auth.PatternLiteral, auth.Allow
	if *f.prefixed {
		pt = auth.PatternPrefixed
	}
	if *f.deny {
		perm = auth.Deny
	}
	var out []*floev1.Acl
	for _, op := range ops {
		a := auth.ACL{Principal: *f.principal, Host: *f.host, Resource: rt, Pattern: pt, Name: name, Operation: op, Permission: perm}
		if err := a.Validate(); err != nil {
			return nil, fmt.Errorf("acl add: %w", err)
		}
		out = append(out, authpb.ACLToProto(a))
	}
	return out, nil
}

// filter builds the filter of acl list and remove.
func (f *aclFlags) filter(sub string) (auth.ACLFilter, error) {
	rt, name, err := f.resource()
	if err != nil {
		return auth.ACLFilter{}, fmt.Errorf("acl %s: %w", sub, err)
	}
	ops, err := f.ops()
	if err != nil {
		return auth.ACLFilter{}, fmt.Errorf("acl %s: %w", sub, err)
	}
	if len(ops) > 1 {
		return auth.ACLFilter{}, fmt.Errorf("acl %s: flag -operation: one operation at most in a filter", sub)
	}
	af := auth.ACLFilter{Principal: *f.principal, Resource: rt, Name: name}
	if len(ops) == 1 {
		af.Operation = ops[0]
	}
	switch {
	case *f.prefixed && *f.literal:
		return auth.ACLFilter{}, fmt.Errorf("acl %s: flags -prefixed and -literal exclude each other", sub)
	case *f.prefixed:
		af.Pattern = auth.PatternPrefixed
	case *f.literal:
		af.Pattern = auth.PatternLiteral
	}
	switch {
	case *f.allow && *f.deny:
		return auth.ACLFilter{}, fmt.Errorf("acl %s: flags -allow and -deny exclude each other", sub)
	case *f.allow:
		af.Permission = auth.Allow
	case *f.deny:
		af.Permission = auth.Deny
	}
	return af, nil
}

func runACL(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, cmd, err := subcommand("acl", aclUsage, aclCommands, []string{"add", "list", "remove"}, args, stdout)
	if err != nil {
		return err
	}
	addr := addrFlag(cmd.fs)
	f := addACLFlags(cmd.fs, sub)
	output := new(string)
	if sub != "add" {
		output = outputFlag(cmd.fs)
	}
	if _, err := cmd.parse(args[1:], stdout); err != nil {
		return err
	}
	if *output != "" {
		if err := checkOutput(*output); err != nil {
			return err
		}
	}
	var acls []*floev1.Acl
	var filter auth.ACLFilter
	if sub == "add" {
		acls, err = f.add(cmd)
	} else {
		filter, err = f.filter(sub)
	}
	if err != nil {
		return err
	}
	if sub == "remove" && !*f.all && filter == (auth.ACLFilter{}) {
		return fmt.Errorf("acl remove: no filter given: it would remove every ACL; add -all to mean it")
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
	case "add":
		if _, err := a.CreateAcls(ctx, &floev1.CreateAclsRequest{Acls: acls}); err != nil {
			return fmt.Errorf("add acls: %w", err)
		}
		return printACLs(stdout, acls)
	case "list":
		resp, err := a.ListAcls(ctx, &floev1.ListAclsRequest{Filter: authpb.FilterToProto(filter)})
		if err != nil {
			return fmt.Errorf("list acls: %w", err)
		}
		if *output == "json" {
			return printProtoJSON(stdout, resp)
		}
		return printACLs(stdout, resp.GetAcls())
	case "remove":
		resp, err := a.DeleteAcls(ctx, &floev1.DeleteAclsRequest{Filter: authpb.FilterToProto(filter), All: *f.all})
		if err != nil {
			return fmt.Errorf("remove acls: %w", err)
		}
		if *output == "json" {
			return printProtoJSON(stdout, resp)
		}
		return printACLs(stdout, resp.GetDeleted())
	}
	return nil
}

func printACLs(w io.Writer, acls []*floev1.Acl) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PRINCIPAL\tPERMISSION\tOPERATION\tRESOURCE\tPATTERN\tNAME\tHOST")
	for _, a := range acls {
		host := a.GetHost()
		if host == "" {
			host = "*"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.GetPrincipal(), auth.Permission(a.GetPermission()),
			auth.Operation(a.GetOperation()), auth.ResourceType(a.GetResourceType()), auth.PatternType(a.GetPatternType()),
			a.GetName(), host)
	}
	return tw.Flush()
}
