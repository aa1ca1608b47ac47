/* test_arm_file.c: trainer/arm_file.c (the configs folder's search order,
 * an arm name to its file) and config_apply_switches (an arm's file over
 * another config), on folders made here under /tmp.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "t.h"
#include "lib/fileio.h"
#include "trainer/arm_file.h"
#include "trainer/config.h"

static char dir[] = "/tmp/supkit-armfile-XXXXXX";

/* dir/rel, caller frees */
static char *at(const char *rel)
{
	return path_join(dir, rel);
}

static void mkdirs(const char *rel)
{
	char *p = at(rel);
	struct err e;
	if (dir_make_all(p, &e) != 0)
		fprintf(stderr, "%s\n", e.msg);
	free(p);
}

static void put(const char *rel, const char *text)
{
	char *p = at(rel);
	FILE *f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	free(p);
}

/* 1 when got is dir/rel */
static int is_at(const char *got, const char *rel)
{
	char *want = at(rel);
	int same = got && !strcmp(got, want);
	if (!same)
		fprintf(stderr, "  got '%s', want '%s'\n", got ? got : "(null)", want);
	free(want);
	return same;
}

/* A source tree src/ (configs/arms, trainer/config.c) and an installed
 * prefix inst/ (bin/, share/supkit/configs). */
static void make_trees(void)
{
	mkdirs("src/configs/arms/d8");
	mkdirs("src/trainer");
	put("src/trainer/config.c", "/* marker */\n");
	mkdirs("src/bin");
	mkdirs("src/build/san/gpu/bin");
	mkdirs("src/build/a/b/c/bin");
	mkdirs("inst/bin");
	mkdirs("inst/share/supkit/configs/arms/d8");
	mkdirs("bare/bin");
	/* a folder named configs that is no source tree (no trainer/config.c) */
	mkdirs("home/configs/arms");
	mkdirs("home/bin");
}

TEST(env_first)
{
	struct err e;
	char *envdir = at("inst/share/supkit/configs");
	char *exe = at("src/bin/supkit-train");
	char *d = arm_configs_dir(envdir, exe, &e);
	CHECK(is_at(d, "inst/share/supkit/configs"));
	free(d);
	/* set but missing: refused, not passed over */
	char *missing = at("nowhere");
	CHECK(arm_configs_dir(missing, exe, &e) == NULL);
	CHECK(e.code == EXIT_SYS);
	CHECKF(strstr(e.msg, "SUPKIT_CONFIGS") && strstr(e.msg, "nowhere"), "%s", e.msg);
	char *file = at("src/trainer/config.c");
	CHECK(arm_configs_dir(file, exe, &e) == NULL);
	CHECKF(strstr(e.msg, "not a folder"), "%s", e.msg);
	/* set but empty: as if unset */
	d = arm_configs_dir("", exe, &e);
	CHECK(is_at(d, "src/configs"));
	free(d);
	free(file);
	free(missing);
	free(exe);
	free(envdir);
}

TEST(source_tree_then_installed)
{
	struct err e;
	static const char *const in_tree[] = {"src/bin/supkit-train", "src/build/san/gpu/bin/supkit-train"};
	for (int i = 0; i < 2; i++) {
		char *exe = at(in_tree[i]);
		char *d = arm_configs_dir(NULL, exe, &e);
		CHECKF(is_at(d, "src/configs"), "%s", in_tree[i]);
		free(d);
		free(exe);
	}
	/* five folders up is no longer the program's source tree */
	char *exe = at("src/build/a/b/c/bin/supkit-train");
	CHECK(arm_configs_dir(NULL, exe, &e) == NULL);
	free(exe);
	exe = at("inst/bin/supkit-train");
	char *d = arm_configs_dir(NULL, exe, &e);
	CHECK(is_at(d, "inst/share/supkit/configs"));
	free(d);
	free(exe);
	/* the program's folder is its resolved one: a link elsewhere still finds inst/ */
	char *target = at("inst/bin/supkit-train"), *link = at("bare/bin/supkit-train");
	put("inst/bin/supkit-train", "#!/bin/sh\n");
	CHECK(symlink(target, link) == 0);
	d = arm_configs_dir(NULL, link, &e);
	CHECK(is_at(d, "inst/share/supkit/configs"));
	free(d);
	free(link);
	free(target);
	/* a configs/ beside bin/ that is no source tree is not taken */
	exe = at("home/bin/supkit-train");
	CHECK(arm_configs_dir(NULL, exe, &e) == NULL);
	CHECK(e.code == EXIT_SYS);
	CHECKF(strstr(e.msg, "home/share/supkit/configs") && strstr(e.msg, "SUPKIT_CONFIGS"), "%s", e.msg);
	free(exe);
	CHECK(arm_configs_dir(NULL, NULL, &e) == NULL);
	CHECKF(strstr(e.msg, "SUPKIT_CONFIGS"), "%s", e.msg);
}

TEST(arm_names)
{
	struct err e;
	put("inst/share/supkit/configs/arms/d8/12do_oe_decoupled_x0_out.cfg", "arm = 12do_oe_decoupled_x0_out\n");
	put("inst/share/supkit/configs/arms/d8/mine.cfg", "arm = mine\n");
	char *cfgdir = at("inst/share/supkit/configs");
	char *p = arm_file_path(cfgdir, "mine", &e);
	CHECK(is_at(p, "inst/share/supkit/configs/arms/d8/mine.cfg"));
	free(p);
	/* a short name means its full name's file */
	p = arm_file_path(cfgdir, "12do", &e);
	CHECK(is_at(p, "inst/share/supkit/configs/arms/d8/12do_oe_decoupled_x0_out.cfg"));
	free(p);
	/* a built-in arm without its file here is unknown here */
	CHECK(arm_file_path(cfgdir, "01_dense_opt", &e) == NULL);
	CHECK(e.code == EXIT_USAGE);
	CHECKF(strstr(e.msg, "unknown arm '01_dense_opt'") && strstr(e.msg, "arms/d8/01_dense_opt.cfg"), "%s", e.msg);
	static const char *const bad[] = {"", "../mine", "d8/mine", ".hidden", "a b"};
	for (int i = 0; i < 5; i++) {
		CHECKF(arm_file_path(cfgdir, bad[i], &e) == NULL, "'%s'", bad[i]);
		CHECKF(e.code == EXIT_USAGE && strstr(e.msg, "not an arm name"), "%s", e.msg);
	}
	free(cfgdir);
}

TEST(switches_over_a_config)
{
	struct err e;
	put("base.cfg", "depth = 8\nsteps = 953\noe = 0\nqk_scale = none\nqk_mask = none\n");
	/* the arm differs in oe and arm; depth and steps as the baseline */
	put("arm.cfg", "# an arm\narm = myarm\ndepth = 8\nsteps = 953\noe = 1\n");
	char *base = at("base.cfg"), *arm = at("arm.cfg");
	struct config c, want;
	const char *tiny = "depth = 2\nsteps = 7\nseed = 5\n";
	config_defaults(&c);
	CHECK(config_load_text(&c, tiny, strlen(tiny), "tiny.cfg", &e) == 0);
	want = c;
	CHECKF(config_apply_switches(&c, base, arm, &e) == 0, "%s", e.msg);
	CHECK_STREQ(c.arm, "myarm");
	CHECK(c.oe == 1);
	CHECK(c.depth == 2 && c.steps == 7 && c.seed == 5);
	/* nothing else moved */
	want.oe = 1;
	snprintf(want.arm, sizeof want.arm, "myarm");
	char *pc = config_print(&c), *pw = config_print(&want);
	CHECK_STREQ(pc, pw);
	free(pc);
	free(pw);
	/* a switch that conflicts with the config is blamed on the arm's file and line */
	put("arm2.cfg", "arm = masked\n\nqk_mask = l0_hf16\n");
	char *arm2 = at("arm2.cfg");
	config_defaults(&c);
	CHECK(config_apply_switches(&c, base, arm2, &e) == 0);
	CHECK(config_validate(&c, &e) != 0);
	CHECKF(strstr(e.msg, "arm2.cfg:3"), "%s", e.msg);
	/* a bad baseline or arm file is named */
	put("bad.cfg", "oe = 2\n");
	char *badp = at("bad.cfg");
	CHECK(config_apply_switches(&c, base, badp, &e) != 0);
	CHECKF(strstr(e.msg, "bad.cfg:1"), "%s", e.msg);
	char *none = at("none.cfg");
	CHECK(config_apply_switches(&c, none, arm, &e) != 0);
	CHECKF(strstr(e.msg, "none.cfg"), "%s", e.msg);
	free(none);
	free(badp);
	free(arm2);
	free(base);
	free(arm);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	make_trees();
	RUN(env_first);
	RUN(source_tree_then_installed);
	RUN(arm_names);
	RUN(switches_over_a_config);
	dir_remove_tree(dir);
	return t_done();
}
