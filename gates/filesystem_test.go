package gates

import (
	"testing"

	"github.com/bidguard/bidguard/engine"
	"github.com/stretchr/testify/require"
)

func TestFilesystemMatch(t *testing.T) {
	all := &filesystem{rm: true, traversal: true, sensitive: true}
	f := func(s, want string) {
		t.Helper()
		require.Equal(t, want, all.match([]byte(s)), "%q", s)
	}
	// rm: recursive and force, in one cluster or several, short or long
	for _, s := range []string{"rm -rf /", "rm -fr x", "rm -Rf x", "rm -rfv x", "rm -r -f x", "rm -r --force x",
		"rm --force --recursive x", "rm --recursive -f", "rm -v -r -i -f", "sudo rm -rf /", ";rm\t-rf ~", "/bin/rm -rf /tmp",
		"`rm -rf`", "rm  -rf", "rm -rf", "rm --no-preserve-root -rf /"} {
		f(s, reasonRmRf)
	}
	for _, s := range []string{"rm -r x", "rm -f x", "rm x -rf", "rm -r x -f", "form -rf", "rmdir -rf", "farm -rf x",
		"rm", "rm-rf", "rm -- -rf", "RM -RF /", "rm -i -v", "rm --forced --recursive"} {
		f(s, "")
	}
	// traversal: `..` as a whole component
	for _, s := range []string{"../x", "a/../b", `..\x`, `a\..\b`, "..", "cd ..", `"../etc"`, "'..'", "x/..", "https://x.com/a/../b"} {
		f(s, reasonTraversal)
	}
	for _, s := range []string{"Loading...", "a..b", "...", "wait.../x", "x/...", "..x", "x..", "v1..2"} {
		f(s, "")
	}
	// sensitive paths at a token start, as whole components
	f("/etc", reasonSensitive+"/etc")
	f("cat /etc/passwd", reasonSensitive+"/etc")
	f(`src="/var/log/x"`, reasonSensitive+"/var")
	f("path=/usr/bin", reasonSensitive+"/usr")
	f("open(/etc/shadow)", reasonSensitive+"/etc")
	f("file:/etc/hosts", reasonSensitive+"/etc")
	f("ls ~/.ssh", reasonSensitive+"~/.ssh")
	f("~/.aws/credentials", reasonSensitive+"~/.aws")
	f("~/.gnupg", reasonSensitive+"~/.gnupg")
	f("/home/alice/.ssh/id_rsa", reasonSensitive+"/home/<user>/.ssh")
	f("'/home/bob/.aws'", reasonSensitive+"/home/<user>/.aws")
	f("/home/x/.gnupg/", reasonSensitive+"/home/<user>/.gnupg")
	f("see /etc;", reasonSensitive+"/etc")
	for _, s := range []string{"/etcetera", "/etc.clientlibs/x.js", "/variable", "/usr2", "https://cdn.x.com/var/a.png",
		"http://x.com/etc/passwd", "//etc", "file:///etc/passwd", "a/etc", "x:/etcx", "~/.sshd", "/home/.ssh", "/home/a/b/.ssh",
		"/home/a/.ssh2", "~/.awsome", "cdn.com/usr/x"} {
		f(s, "")
	}
	// order: rm, traversal, sensitive
	f("cat /etc/x; rm -rf ../y", reasonRmRf)
	f("cat /etc/x ../y", reasonTraversal)
	f("~/.ssh and /etc", reasonSensitive+"~/.ssh")
}

func TestFilesystemOptions(t *testing.T) {
	s := []byte("rm -rf ../x /etc")
	require.Equal(t, reasonTraversal, (&filesystem{traversal: true, sensitive: true}).match(s))
	require.Equal(t, reasonSensitive+"/etc", (&filesystem{sensitive: true}).match(s))
	require.Equal(t, "", (&filesystem{}).match(s))

	g, err := buildGateEnv(t, filesystemFactory, "", engine.Env{})
	require.NoError(t, err)
	require.Equal(t, &filesystem{rm: true, traversal: true, sensitive: true, limit: scanLimit{maxNodes: 10000}}, g)
	g, err = buildGateEnv(t, filesystemFactory, "detectRmRf: false, detectSensitive: false, maxNodes: 7", engine.Env{})
	require.NoError(t, err)
	require.Equal(t, &filesystem{traversal: true, limit: scanLimit{maxNodes: 7}}, g)
	_, err = buildGateEnv(t, filesystemFactory, "maxNodes: 0", engine.Env{})
	require.ErrorContains(t, err, "maxNodes must be > 0")
	_, err = buildGateEnv(t, filesystemFactory, "detectRm: true", engine.Env{})
	require.ErrorContains(t, err, `unknown option "detectRm"`)
}

func TestFilesystemScanTypicalPairPasses(t *testing.T) {
	requireScanPassesTypical(t, &filesystem{rm: true, traversal: true, sensitive: true, limit: scanLimit{maxNodes: defaultMaxNodes}})
}

func BenchmarkFilesystem(b *testing.B) {
	benchScanTypical(b, &filesystem{rm: true, traversal: true, sensitive: true, limit: scanLimit{maxNodes: defaultMaxNodes}})
}
