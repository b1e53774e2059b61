// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* user/process/proc_labels.c: container ids and pod uids from cgroup paths; HOSTNAME; namespace. */
#include <criterion/criterion.h>
#include <string.h>
#include "proc_labels.h"

#define ID "8bc5665880644a4dfcc8c448d4a3f448e710e262db01212c8d9fc7105e846745"
#define UID "0f3c9a1e-2b4d-4e8f-9a7b-1c2d3e4f5a6b"
#define UID_ "0f3c9a1e_2b4d_4e8f_9a7b_1c2d3e4f5a6b"

static void cgroup_is(const char *text, const char *id, const char *uid)
{
	struct proc_labels l;

	memset(&l, 'x', sizeof(l));
	proc_labels_from_cgroup(text, &l);
	cr_expect_str_eq(l.container_id, id, "container id of %s", text);
	cr_expect_str_eq(l.pod_uid, uid, "pod uid of %s", text);
}

Test(proc_labels, container_runtimes)
{
	/* podman with cgroupfs on cgroup v1 (this machine: every hierarchy, then 0::). */
	cgroup_is("9:name=systemd:/libpod_parent/libpod-" ID "\n8:pids:/libpod_parent/libpod-" ID
		  "\n0::/libpod_parent/libpod-" ID "\n",
		  ID, "");
	/* podman and docker with systemd, cgroup v2 */
	cgroup_is("0::/machine.slice/libpod-" ID ".scope/container\n", ID, "");
	cgroup_is("0::/system.slice/docker-" ID ".scope\n", ID, "");
	/* docker with cgroupfs, v1 */
	cgroup_is("12:memory:/docker/" ID "\n11:cpu,cpuacct:/docker/" ID "\n", ID, "");
	/* conmon is podman's monitor, not the container */
	cgroup_is("0::/machine.slice/libpod-conmon-" ID ".scope\n", "", "");
	/* not in a container */
	cgroup_is("0::/user.slice/user-0.slice/session-3.scope\n", "", "");
	cgroup_is("0::/\n", "", "");
	cgroup_is("", "", "");
}

Test(proc_labels, kubernetes_pods)
{
	/* containerd with the systemd driver, v2 */
	cgroup_is("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
		  ".slice/cri-containerd-" ID ".scope\n",
		  ID, UID);
	/* a guaranteed pod (no QoS slice), CRI-O */
	cgroup_is("0::/kubepods.slice/kubepods-pod" UID_ ".slice/crio-" ID ".scope\n", ID, UID);
	/* cgroupfs driver, v1 */
	cgroup_is("11:memory:/kubepods/besteffort/pod" UID "/" ID "\n"
		  "10:cpu,cpuacct:/kubepods/besteffort/pod" UID "/" ID "\n",
		  ID, UID);
	/* podman with --cgroup-parent, as the tests fake a pod */
	cgroup_is("0::/kubepods/burstable/pod" UID "/libpod-" ID "\n", ID, UID);
	/* a pod's cgroup without a container's: no container, so no pod either */
	cgroup_is("0::/kubepods.slice/kubepods-pod" UID_ ".slice\n", "", "");
}

Test(proc_labels, hostile_cgroup_lines)
{
	/* Not hex, too short, too long, upper case, a uid of the wrong shape. */
	cgroup_is("0::/docker-" ID "zz.scope\n", "", "");
	cgroup_is("0::/docker-8bc5665880644a4d.scope\n", "", "");
	cgroup_is("0::/docker-8BC5665880644A4DFCC8C448D4A3F448E710E262DB01212C8D9FC7105E846745\n",
		  "", "");
	cgroup_is("0::/kubepods/podnot-a-uid-at-all-0000000000000000000/" ID "\n", ID, "");
	cgroup_is("0::/kubepods/xpod" UID "/" ID "\n", ID, "");
	/* No colons, a colon in the path, a line without its end. */
	cgroup_is("garbage\n0::/a:b/docker-" ID ".scope", ID, "");
	cgroup_is("0:\n:", "", "");
}

Test(proc_labels, hostname)
{
	static const char env[] = "PATH=/usr/bin\0HOSTNAME=web-7f9c5d-x2kqp\0HOME=/\0";
	static const char bad[] = "HOSTNAME=web\x1b[31m\0";
	static const char upper[] = "HOSTNAME=Web\0";
	static const char cut[] = "A=1\0HOSTNAME=web-7f9c5d";
	char buf[254];

	proc_labels_hostname(env, sizeof(env) - 1, buf, sizeof(buf));
	cr_expect_str_eq(buf, "web-7f9c5d-x2kqp");
	proc_labels_hostname(bad, sizeof(bad) - 1, buf, sizeof(buf));
	cr_expect_str_empty(buf, "not a DNS name: dropped, never shown");
	proc_labels_hostname(upper, sizeof(upper) - 1, buf, sizeof(buf));
	cr_expect_str_empty(buf);
	proc_labels_hostname(cut, sizeof(cut) - 1, buf, sizeof(buf));
	cr_expect_str_empty(buf, "cut by the bound: perhaps not the whole name");
	proc_labels_hostname("", 0, buf, sizeof(buf));
	cr_expect_str_empty(buf);
}

Test(proc_labels, namespace_file)
{
	char buf[64];

	proc_labels_namespace("shop-prod\n", buf, sizeof(buf));
	cr_expect_str_eq(buf, "shop-prod");
	proc_labels_namespace("shop.prod", buf, sizeof(buf));
	cr_expect_str_empty(buf, "a namespace is one label");
	proc_labels_namespace("shop\nprod\n", buf, sizeof(buf));
	cr_expect_str_empty(buf);
	proc_labels_namespace("", buf, sizeof(buf));
	cr_expect_str_empty(buf);
}
