#!/usr/bin/env bash
# Runs in a throwaway Debian 13 chroot (tools/debian-chroot.sh --fresh, from tools/pi-box/run.sh): builds the
# kernel's GPIO simulator, gpio-sim.ko, and the IRQ simulator it needs, irq_sim.ko, out of tree from Debian's own
# kernel source (linux-source-6.12) against the headers of exactly the kernel the box boots. Debian's kernel has
# neither (CONFIG_GPIO_SIM and CONFIG_IRQ_SIM are not set), but has what they stand on (GPIOLIB, GPIO_CDEV,
# CONFIGFS_FS, IRQ_DOMAIN). gpio-sim.c builds as it is; irq_sim.c, written to be built in, takes two changes to be
# a module (below).
#   tools/pi-box/build-module.sh KERNEL_VERSION OUT_DIR      (OUT_DIR gets irq_sim.ko and gpio-sim.ko)
set -euo pipefail
kver="$1" out="$2"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# The headers package brings the kernel's own compiler (gcc-14) and kbuild; make is not among its dependencies.
apt-get install -y -qq --no-install-recommends make xz-utils "linux-headers-$kver" linux-source-6.12 > /tmp/apt.log 2>&1 \
    || { tail -20 /tmp/apt.log >&2; echo "build-module: cannot install linux-headers-$kver and linux-source-6.12 (above)" >&2; exit 1; }
source_version="$(dpkg-query -W -f='${Version}' linux-source-6.12)"
headers_version="$(dpkg-query -W -f='${Version}' "linux-headers-$kver")"
[ "$source_version" = "$headers_version" ] || {
    echo "build-module: linux-source-6.12 is $source_version but linux-headers-$kver is $headers_version: the mirror has moved on; rebuild the box's image (tools/pi-box/run.sh --rebuild)" >&2; exit 1; }

work="$(mktemp -d)"
tar -C "$work" -xJf /usr/src/linux-source-6.12.tar.xz --strip-components=1 \
    linux-source-6.12/drivers/gpio/gpio-sim.c linux-source-6.12/kernel/irq/irq_sim.c
cp "$work/drivers/gpio/gpio-sim.c" "$work/kernel/irq/irq_sim.c" "$work/"
# irq_sim.c as a module: a licence (its SPDX line's, GPL-2.0+), and its interrupt handler called through
# generic_handle_irq(), which modules may call, instead of irq_to_desc(), which the kernel does not export; the
# handler it reaches is the same (irq_sim_domain_map sets handle_simple_irq for every interrupt).
grep -q '^// SPDX-License-Identifier: GPL-2.0+$' "$work/irq_sim.c" || { echo "build-module: irq_sim.c is no longer GPL-2.0+" >&2; exit 1; }
grep -q 'irq_set_handler(virq, handle_simple_irq);' "$work/irq_sim.c" \
    && grep -q 'handle_simple_irq(irq_to_desc(irqnum));' "$work/irq_sim.c" \
    || { echo "build-module: irq_sim.c is not as this script knows it (handle_simple_irq, irq_to_desc): look again" >&2; exit 1; }
sed -i 's/handle_simple_irq(irq_to_desc(irqnum));/generic_handle_irq(irqnum);/' "$work/irq_sim.c"
printf '\n#include <linux/module.h>\nMODULE_LICENSE("GPL");\nMODULE_DESCRIPTION("interrupt simulator (kernel/irq/irq_sim.c as a module, for gpio-sim)");\n' >> "$work/irq_sim.c"
echo 'obj-m := irq_sim.o gpio-sim.o' > "$work/Kbuild"
make -C "/lib/modules/$kver/build" M="$work" modules > "$work/build.log" 2>&1 \
    || { tail -30 "$work/build.log" >&2; echo "build-module: the out-of-tree build failed (above)" >&2; exit 1; }
mkdir -p "$out"
cp "$work/irq_sim.ko" "$work/gpio-sim.ko" "$out/"
echo "build-module: $(modinfo -F vermagic "$out/gpio-sim.ko") from linux-source-6.12 $source_version" >&2
