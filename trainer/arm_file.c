/* arm_file.c: where supkit train --arm finds an arm's file (arm_file.h has
 * the search order). Only stat, realpath and readlink: no file is read here.
 */
#define _GNU_SOURCE
#include "trainer/arm_file.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fileio.h"
#include "trainer/config.h"

static int is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* ROOT/configs when ROOT holds configs/arms/ and trainer/config.c */
static char *source_tree_configs(const char *root)
{
	char *cfg = path_join(root, "configs");
	char *arms = path_join(cfg, "arms");
	char *src = path_join(root, "trainer/config.c");
	int ok = is_dir(arms) && is_file(src);
	free(arms);
	free(src);
	if (!ok) {
		free(cfg);
		return NULL;
	}
	return cfg;
}

char *arm_configs_dir(const char *env, const char *exe, struct err *e)
{
	if (env && *env) {
		struct stat st;
		if (stat(env, &st) != 0) {
			err_errno(e, EXIT_SYS, "cannot use SUPKIT_CONFIGS '%s'", env);
			return NULL;
		}
		if (!S_ISDIR(st.st_mode)) {
			err_set(e, EXIT_SYS, "cannot use SUPKIT_CONFIGS '%s': not a folder", env);
			return NULL;
		}
		return xstrdup(env);
	}
	char *installed = NULL;
	if (exe) {
		char real[PATH_MAX];
		char *bindir = path_dirname(realpath(exe, real) ? real : exe);
		char *up = xstrdup(bindir);
		for (int level = 1; level <= 4; level++) {
			char *parent = path_dirname(up);
			int top = !strcmp(parent, up);
			free(up);
			up = parent;
			if (top)
				break;
			char *cfg = source_tree_configs(up);
			if (cfg) {
				free(up);
				free(bindir);
				return cfg;
			}
		}
		free(up);
		char *prefix = path_dirname(bindir);
		installed = path_join(prefix, "share/supkit/configs");
		free(prefix);
		free(bindir);
		if (is_dir(installed))
			return installed;
	}
	if (installed)
		err_set(e, EXIT_SYS, "no configs folder: '%s' does not exist and the program is not in a "
			"source tree (set SUPKIT_CONFIGS)", installed);
	else
		err_set(e, EXIT_SYS, "no configs folder: the program's own path is unknown (set SUPKIT_CONFIGS)");
	free(installed);
	return NULL;
}

char *arm_self_exe(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	return xstrdup(buf);
}

static int plain_name(const char *s)
{
	if (!*s || *s == '.')
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_' || *s == '-' || *s == '.'))
			return 0;
	return 1;
}

static char *arm_path(const char *dir, const char *name)
{
	char *rel = xasprintf("arms/d8/%s.cfg", name);
	char *p = path_join(dir, rel);
	free(rel);
	return p;
}

char *arm_file_path(const char *dir, const char *name, struct err *e)
{
	if (!plain_name(name)) {
		err_set(e, EXIT_USAGE, "--arm '%s': not an arm name (letters, digits, _ - .)", name);
		return NULL;
	}
	char *p = arm_path(dir, name);
	if (is_file(p))
		return p;
	int i = config_arm_find(name);
	if (i >= 0 && strcmp(config_arm_name(i), name)) {
		char *full = arm_path(dir, config_arm_name(i));
		if (is_file(full)) {
			free(p);
			return full;
		}
		free(full);
	}
	err_set(e, EXIT_USAGE, "unknown arm '%s': no '%s' (supkit audit compute --list-arms)", name, p);
	free(p);
	return NULL;
}
