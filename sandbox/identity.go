package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"syscall"

	"github.com/toolbox-dev/toolbox/sandbox/helper"
)

const fixRunAs = "name a user and group that exist on this machine in runtime.run_as, or remove run_as"

// LookupIdentity resolves a run_as declaration: user and group are names or
// numeric ids. An empty group means the user's primary group. Supplementary
// groups come from the user database (getgrouplist or /etc/group); a
// numeric uid without a database entry gets none, and then group is
// required. Errors are *RefusalError naming FieldUser or FieldGroup.
func LookupIdentity(userName, groupName string) (*Identity, error) {
	if userName == "" {
		return nil, refuse(FieldUser, "", fixRunAs, "the user is empty")
	}
	id := &Identity{}
	u, err := lookupUser(userName)
	switch {
	case err == nil:
		uid, err1 := parseID(u.Uid)
		gid, err2 := parseID(u.Gid)
		if err1 != nil || err2 != nil {
			return nil, refuse(FieldUser, "", fixRunAs, "user %q has a non-numeric uid %q or gid %q", userName, u.Uid, u.Gid)
		}
		id.UID, id.GID = uid, gid
		gids, err := u.GroupIds()
		if err != nil {
			return nil, refuse(FieldUser, "", fixRunAs, "listing the groups of user %q: %v", userName, err)
		}
		for _, g := range gids {
			n, err := parseID(g)
			if err != nil {
				return nil, refuse(FieldUser, "", fixRunAs, "user %q has a non-numeric group id %q", userName, g)
			}
			id.Groups = append(id.Groups, n)
		}
	case isUnknown(err):
		uid, perr := parseID(userName)
		if perr != nil {
			return nil, refuse(FieldUser, "", fixRunAs, "no user %q in the user database", userName)
		}
		if groupName == "" {
			return nil, refuse(FieldGroup, "", "set runtime.run_as.group to a group name or id",
				"uid %d has no entry in the user database, so its group must be given", uid)
		}
		id.UID = uid
	default:
		return nil, refuse(FieldUser, "", fixRunAs, "looking up user %q: %v", userName, err)
	}
	if groupName != "" {
		gid, err := lookupGroupID(groupName)
		if err != nil {
			return nil, err
		}
		id.GID = gid
	}
	if !slices.Contains(id.Groups, id.GID) {
		id.Groups = append(id.Groups, id.GID)
	}
	slices.Sort(id.Groups)
	return id, nil
}

func lookupUser(name string) (*user.User, error) {
	if _, err := parseID(name); err == nil {
		return user.LookupId(name)
	}
	return user.Lookup(name)
}

func lookupGroupID(name string) (uint32, error) {
	var g *user.Group
	var err error
	if n, perr := parseID(name); perr == nil {
		g, err = user.LookupGroupId(name)
		if isUnknown(err) {
			return n, nil // a bare gid is fine without a database entry
		}
	} else {
		g, err = user.LookupGroup(name)
	}
	if isUnknown(err) {
		return 0, refuse(FieldGroup, "", fixRunAs, "no group %q in the group database", name)
	}
	if err != nil {
		return 0, refuse(FieldGroup, "", fixRunAs, "looking up group %q: %v", name, err)
	}
	gid, err := parseID(g.Gid)
	if err != nil {
		return 0, refuse(FieldGroup, "", fixRunAs, "group %q has a non-numeric gid %q", name, g.Gid)
	}
	return gid, nil
}

func isUnknown(err error) bool {
	var uu user.UnknownUserError
	var ui user.UnknownUserIdError
	var gu user.UnknownGroupError
	var gi user.UnknownGroupIdError
	return errors.As(err, &uu) || errors.As(err, &ui) || errors.As(err, &gu) || errors.As(err, &gi)
}

func parseID(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, err
	}
	if n == 1<<32-1 {
		return 0, fmt.Errorf("id %q is reserved", s)
	}
	return uint32(n), nil
}

// credential returns the credentials to start a child with for id: nil when
// id is nil or already ours (nothing to switch). It refuses (FieldRunAs,
// mechanism m) when switching needs privileges this process lacks: only
// root can become another user.
func credential(id *Identity, m Mechanism) (*syscall.Credential, error) {
	if id == nil {
		return nil, nil
	}
	if os.Geteuid() != 0 {
		if helper.IsSelf(id) {
			return nil, nil
		}
		return nil, refuse(FieldRunAs, m, "run toolbox as root, or remove run_as",
			"toolbox runs as uid %d, not root, so it cannot switch to uid %d gid %d", os.Geteuid(), id.UID, id.GID)
	}
	return &syscall.Credential{Uid: id.UID, Gid: id.GID, Groups: slices.Clone(id.Groups)}, nil
}
