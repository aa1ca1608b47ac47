/* arm_file.h: the named arms as files, for supkit train --arm. A configs
 * folder holds baseline.cfg and arms/d8/<arm>.cfg (with arms/d6/, the same
 * files at depth 6): the source tree's configs/, or the copy that make
 * install puts in PREFIX/share/supkit/configs. This finds the folder and
 * the file a name means; config_apply_switches (trainer/config.h) applies
 * an arm's file over another config.
 *
 * The configs folder is the first of:
 *   1. $SUPKIT_CONFIGS, when set and not empty (the only one then);
 *   2. the source tree the program was built in: ROOT/configs, where ROOT
 *      is one of the 1 to 4 folders above the program's own folder and
 *      holds configs/arms/ and trainer/config.c (bin/, build/san/bin/, ...);
 *   3. BINDIR/../share/supkit/configs, BINDIR the program's own folder (an
 *      installed copy, wherever PREFIX was).
 * The program's folder is that of its resolved path (symlinks followed).
 * Leaves out: any other search (no PATH walk, no compiled-in prefix).
 */
#ifndef SUPKIT_ARM_FILE_H
#define SUPKIT_ARM_FILE_H

#include "lib/err.h"

/* The configs folder (see above). env: SUPKIT_CONFIGS's value (NULL when
 * unset); exe: the running program's path (NULL when unknown). Returns a
 * fresh path, or NULL with e set: EXIT_SYS when env names no folder or no
 * folder was found (the message names the places looked in). */
char *arm_configs_dir(const char *env, const char *exe, struct err *e);

/* The running program's path (/proc/self/exe), fresh; NULL when unknown. */
char *arm_self_exe(void);

/* DIR/arms/d8/NAME.cfg when it exists; else, for a short name of a built-in
 * arm (config_arm_find: "12do"), the file of its full name. Returns a fresh
 * path, or NULL with e set (EXIT_USAGE): NAME is not a plain file name, or
 * no such file (the message names the file looked for). */
char *arm_file_path(const char *dir, const char *name, struct err *e);

#endif
