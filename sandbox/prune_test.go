package sandbox

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// otherOwner is a process like this one, on this boot and in this PID
// namespace, with the pid given (start time unknown) and an owner id of
// its own.
func otherOwner(pid int) owner {
	o := self()
	o.ID, o.PID, o.Start = NewSessionID(), pid, ""
	return o
}

// fakeLabels are the labels owner o would put on a container or volume of
// session made at created.
func fakeLabels(session string, o owner, created time.Time) map[string]string {
	l := o.labels()
	l[LabelSession] = session
	l[LabelCreated] = strconv.FormatInt(created.Unix(), 10)
	return l
}

// fakeContainer makes a container with these labels in the kernel image:
// created only, running (sleeping) or exited. The test's cleanup removes it.
func fakeContainer(t *testing.T, cli *client.Client, labels map[string]string, state container.ContainerState) string {
	t.Helper()
	removeSessionOnCleanup(t, cli, labels[LabelSession])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := []string{"sleep", "0"}
	if state == container.StateRunning {
		cmd = []string{"sleep", "600"}
	}
	c, err := cli.ContainerCreate(ctx, &container.Config{Image: KernelImage(), Cmd: cmd, Entrypoint: []string{}, Labels: labels},
		&container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	require.NoError(t, err)
	if state == container.StateCreated {
		return c.ID
	}
	require.NoError(t, cli.ContainerStart(ctx, c.ID, container.StartOptions{}))
	if state == container.StateExited {
		waitC, errC := cli.ContainerWait(ctx, c.ID, container.WaitConditionNotRunning)
		select {
		case <-waitC:
		case err := <-errC:
			require.NoError(t, err)
		}
	}
	info, err := cli.ContainerInspect(ctx, c.ID)
	require.NoError(t, err)
	require.Equal(t, state, info.State.Status)
	return c.ID
}

// fakeVolume makes a volume with these labels; the test's cleanup removes it.
func fakeVolume(t *testing.T, cli *client.Client, labels map[string]string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := cli.VolumeCreate(ctx, volume.CreateOptions{Labels: labels})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cli.VolumeRemove(ctx, v.Name, true); err != nil && !client.IsErrNotFound(err) {
			t.Errorf("remove volume %s: %v", v.Name, err)
		}
	})
	return v.Name
}

func volumeExists(t *testing.T, cli *client.Client, name string) bool {
	t.Helper()
	return inspected(t, func(ctx context.Context) error { _, err := cli.VolumeInspect(ctx, name); return err })
}

func TestOwnerLabels(t *testing.T) {
	me := self()
	require.NotEmpty(t, me.Boot, "this test runs on Linux, which has a boot id")
	require.NotEmpty(t, me.PIDNS, "this test runs on Linux, which has PID namespaces")
	link, err := os.Readlink("/proc/self/ns/pid")
	require.NoError(t, err)
	assert.Equal(t, "pid:["+me.PIDNS+"]", link)
	assert.Len(t, me.Boot, 36, "a boot id is a UUID")
	assert.Equal(t, os.Getpid(), me.PID)
	assert.NotEmpty(t, me.Start)
	assert.Len(t, me.ID, 24)
	assert.Equal(t, me, ownerOf(me.labels()), "the labels keep everything")
	assert.False(t, bootTime().IsZero())
	assert.True(t, bootTime().Before(time.Now()))
}

// TestJudge is the judging rule over every kind of owner; TestPruneJudges
// checks it on a real daemon.
func TestJudge(t *testing.T) {
	me := self()
	dead := deadPID(t)
	booted := time.Now().Add(-time.Hour)
	beforeBoot, afterBoot := booted.Add(-time.Hour), booted.Add(time.Minute)
	now := time.Now()
	with := func(o owner, f func(*owner)) owner { f(&o); return o }
	otherBoot := func(o *owner) { o.Boot = "5b1b2a6e-0000-4000-8000-000000000000" }

	for _, tc := range []struct {
		name      string
		me        owner // zero: self()
		o         owner
		stopped   bool
		created   time.Time // zero: now
		olderThan time.Duration
		reason    string // a fragment; empty: kept
		kept      string // a fragment, when kept
	}{
		{name: "this process", o: me, created: beforeBoot, olderThan: time.Nanosecond, kept: "this process"},
		{name: "this namespace, pid gone", o: otherOwner(dead), reason: "(pid " + strconv.Itoa(dead) + ") is gone"},
		{name: "this namespace, pid alive", o: with(otherOwner(os.Getpid()), func(o *owner) { o.Start = me.Start }), kept: "in use by pid"},
		{name: "this namespace, pid alive, start unknown", o: otherOwner(os.Getpid()), kept: "in use by pid"},
		{name: "this namespace, pid reused", o: with(otherOwner(os.Getpid()), func(o *owner) { o.Start = "1" }), reason: "another process now"},
		{name: "this namespace, pid alive, old", o: otherOwner(os.Getpid()), created: beforeBoot, olderThan: time.Minute, reason: "older than 1m0s"},
		{name: "other namespace, pid gone here", o: with(otherOwner(dead), func(o *owner) { o.PIDNS = "1" }), kept: "another PID namespace"},
		{name: "other namespace, old", o: with(otherOwner(dead), func(o *owner) { o.PIDNS = "1" }), created: beforeBoot, olderThan: time.Minute, reason: "older than"},
		{name: "other namespace, young", o: with(otherOwner(dead), func(o *owner) { o.PIDNS = "1" }), olderThan: time.Hour, kept: "another PID namespace"},
		{name: "labels of an older ctxcode", o: owner{Host: me.Host, PID: dead}, stopped: true, created: beforeBoot, kept: "without owner labels"},
		{name: "no pid", o: with(otherOwner(0), func(o *owner) { o.PID = 0 }), kept: "without owner labels"},
		{name: "judge without /proc", me: owner{ID: "x", Host: me.Host, PID: os.Getpid()}, o: otherOwner(dead), kept: "cannot tell its own"},
		{name: "other hostname, same kernel", o: with(otherOwner(dead), func(o *owner) { o.Host, o.PIDNS = "sibling", "1" }), kept: "another PID namespace"},
		{name: "other host", o: with(otherOwner(dead), func(o *owner) { otherBoot(o); o.Host = "elsewhere" }), kept: "on host elsewhere"},
		{name: "other host, other boot, stopped", o: with(otherOwner(dead), func(o *owner) { otherBoot(o); o.Host = "elsewhere" }), stopped: true, created: beforeBoot, kept: "on host elsewhere"},
		{name: "earlier boot, stopped", o: with(otherOwner(dead), otherBoot), stopped: true, created: beforeBoot, reason: "boot has ended"},
		{name: "other boot, running", o: with(otherOwner(dead), otherBoot), created: beforeBoot, kept: "another machine with this name"},
		{name: "other boot, stopped, newer than this boot", o: with(otherOwner(dead), otherBoot), stopped: true, created: afterBoot, kept: "another machine with this name"},
		{name: "other boot, running, old", o: with(otherOwner(dead), otherBoot), created: beforeBoot, olderThan: time.Minute, reason: "older than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			judgeMe := tc.me
			if judgeMe == (owner{}) {
				judgeMe = me
			}
			created := tc.created
			if created.IsZero() {
				created = now
			}
			reason, kept := judge(judgeMe, booted, tc.o, tc.stopped, created, tc.olderThan, now)
			if tc.reason != "" {
				assert.Contains(t, reason, tc.reason)
				assert.Empty(t, kept)
				return
			}
			assert.Empty(t, reason, "removed, but only %q may remove it", tc.kept)
			assert.Contains(t, kept, tc.kept)
		})
	}
}

// TestPruneJudges checks on the daemon that the sweep removes the
// containers and volumes of gone owners it can look up, and leaves those
// of owners it cannot (another PID namespace with this hostname, as CI in
// a container sharing the host's Docker has; labels missing; another
// host), which only an age limit removes.
func TestPruneJudges(t *testing.T) {
	cli := newDockerClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	me := self()
	now, yearAgo := time.Now(), time.Now().AddDate(-1, 0, 0)
	dead := deadPID(t)
	base := testSession(t)

	live := testConfig(t)
	removeSessionOnCleanup(t, cli, live.Session)
	k := startKernel(t, live)
	liveCs := sessionContainers(t, cli, live.Session)
	require.Len(t, liveCs, 1)
	liveID := liveCs[0].ID
	for _, l := range []string{LabelOwner, LabelHost, LabelBoot, LabelPIDNS, LabelPID, LabelPIDStart} {
		assert.Equal(t, me.labels()[l], liveCs[0].Labels[l], "label %s of a container this process made", l)
	}

	otherNS := otherOwner(dead)
	otherNS.PIDNS = "4026500001" // not ours; the same pid, gone here, may live there
	oldStyle := owner{Host: me.Host, PID: dead}
	elsewhere := otherOwner(dead)
	elsewhere.Host, elsewhere.Boot, elsewhere.PIDNS = "ctxcode-test-elsewhere", "5b1b2a6e-0000-4000-8000-000000000001", "4026531836"
	earlierBoot := otherOwner(dead)
	earlierBoot.Boot = "5b1b2a6e-0000-4000-8000-000000000002"
	reused := otherOwner(os.Getpid())
	reused.Start = "1"

	type fake struct {
		name    string
		o       owner
		created time.Time
		state   container.ContainerState
		swept   bool // removed by the sweep
		aged    bool // removed by prune with a 30-day age limit
	}
	fakes := []fake{
		{name: "ours-dead", o: otherOwner(dead), created: now, state: container.StateRunning, swept: true},
		{name: "ours-reused-pid", o: reused, created: now, state: container.StateRunning, swept: true},
		{name: "other-ns", o: otherNS, created: now, state: container.StateRunning},
		{name: "other-ns-exited", o: otherNS, created: now, state: container.StateExited},
		{name: "other-ns-old", o: otherNS, created: yearAgo, state: container.StateRunning, aged: true},
		{name: "old-style-labels", o: oldStyle, created: now, state: container.StateCreated},
		{name: "other-host", o: elsewhere, created: now, state: container.StateExited},
		{name: "earlier-boot-exited", o: earlierBoot, created: bootTime().Add(-time.Hour), state: container.StateExited, swept: true},
		{name: "earlier-boot-running", o: earlierBoot, created: bootTime().Add(-time.Hour), state: container.StateRunning},
		{name: "other-boot-exited-newer", o: earlierBoot, created: now, state: container.StateExited},
	}
	ids := map[string]string{}
	for _, f := range fakes {
		ids[f.name] = fakeContainer(t, cli, fakeLabels(base+"-"+f.name, f.o, f.created), f.state)
	}
	volumes := map[string]string{
		"ours-dead": fakeVolume(t, cli, fakeLabels(base+"-vol-ours-dead", otherOwner(dead), now)),
		"other-ns":  fakeVolume(t, cli, fakeLabels(base+"-vol-other-ns", otherNS, now)),
	}

	// Another ctxcode process on this machine (a test run next to this one)
	// may sweep the fakes of gone owners at any moment: that they are gone
	// is checked, not who removed them.
	all, err := List(ctx, cli, 0)
	require.NoError(t, err)
	listed := map[string]Orphan{}
	for _, o := range all {
		listed[o.ID] = o
	}
	assert.Equal(t, "in use by this process", listed[liveID].Kept)
	for name, want := range map[string]string{
		"other-ns":             "Kept: another PID namespace",
		"other-ns-exited":      "Kept: another PID namespace",
		"old-style-labels":     "Kept: without owner labels",
		"other-host":           "Kept: on host ctxcode-test-elsewhere",
		"earlier-boot-running": "Kept: another machine",
		"ours-dead":            "Reason: is gone",
		"ours-reused-pid":      "Reason: another process now",
		"earlier-boot-exited":  "Reason: boot has ended",
	} {
		o, ok := listed[ids[name]]
		field, frag, _ := strings.Cut(want, ": ")
		if field == "Reason" {
			if ok {
				assert.Contains(t, o.Reason, frag, "why %s may be removed", name)
			}
			continue
		}
		require.True(t, ok, "List did not list %s", name)
		assert.Empty(t, o.Reason, "%s is judged removable", name)
		assert.Contains(t, o.Kept, frag, "why %s is kept", name)
	}

	dry, err := Prune(ctx, cli, PruneOptions{DryRun: true})
	require.NoError(t, err)
	for _, f := range fakes {
		if !f.swept {
			assert.NotContains(t, orphanIDs(dry), ids[f.name], "a dry run lists %s", f.name)
			assert.True(t, containerExists(t, cli, ids[f.name]), "a dry run removed %s", f.name)
		}
	}

	require.NoError(t, Sweep(ctx, cli))
	for _, f := range fakes {
		assert.Equal(t, !f.swept, containerExists(t, cli, ids[f.name]), "after the sweep, %s is there", f.name)
	}
	assert.False(t, volumeExists(t, cli, volumes["ours-dead"]), "the sweep left the volume of a gone owner")
	assert.True(t, volumeExists(t, cli, volumes["other-ns"]), "the sweep removed the volume of another namespace's owner")
	assert.True(t, containerExists(t, cli, liveID))
	requireWorks(t, k)

	t.Run("prune without an age limit is the sweep", func(t *testing.T) {
		removed, err := Prune(ctx, cli, PruneOptions{})
		require.NoError(t, err)
		for _, f := range fakes {
			assert.NotContains(t, orphanIDs(removed), ids[f.name], "prune removed %s", f.name)
		}
		assert.True(t, containerExists(t, cli, ids["other-ns"]))
	})

	t.Run("an age limit removes what is old enough, whoever owns it", func(t *testing.T) {
		// A month: nothing another process uses now is that old.
		removed, err := Prune(ctx, cli, PruneOptions{OlderThan: 30 * 24 * time.Hour})
		require.NoError(t, err)
		assert.Contains(t, orphanIDs(removed)[ids["other-ns-old"]], "older than")
		for _, f := range fakes {
			if !f.swept {
				assert.Equal(t, !f.aged, containerExists(t, cli, ids[f.name]), "after prune --older-than 720h, %s is there", f.name)
			}
		}
		assert.True(t, containerExists(t, cli, liveID))
		assert.True(t, volumeExists(t, cli, volumes["other-ns"]))
		requireWorks(t, k)
	})
}
