# SPDX-License-Identifier: Apache-2.0
# Sourced by the security tests (these in tests/security/ and tests/cluster/security_*): two real
# unprivileged users, made here when missing (root is needed for that; without it the tests skip
# with status 77).
#   dlxalice    the victim: submits experiments
#   dlxmallory  the attacker: a member of dlxalice's group (group members may read an experiment,
#               never change, block or run it)
if [ "$(id -u)" != 0 ]; then
  echo "SKIP: the security tests create the users dlxalice and dlxmallory: run them as root"
  exit 77
fi
ALICE=dlxalice
MALLORY=dlxmallory
for u in "$ALICE" "$MALLORY"; do
  # Tests run in parallel: another may have made the user meanwhile.
  id "$u" > /dev/null 2>&1 || useradd --system --user-group --no-create-home --shell /bin/bash "$u" ||
    id "$u" > /dev/null
done
id -nG "$MALLORY" | tr ' ' '\n' | grep -qx "$ALICE" || usermod -a -G "$ALICE" "$MALLORY"

