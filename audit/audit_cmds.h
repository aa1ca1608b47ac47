/* audit_cmds.h: the subcommands of supkit-audit. Each lives in its own
 * audit/sub_<name>.c (thin: parse, validate, call the library, report) and
 * takes argv from the subcommand name on (argv[0] = "compute"). Returns the
 * exit status. */
#ifndef SUPKIT_AUDIT_CMDS_H
#define SUPKIT_AUDIT_CMDS_H

int audit_compute_main(int argc, char **argv);
int audit_stats_main(int argc, char **argv);
int audit_geometry_main(int argc, char **argv);
int audit_digest_main(int argc, char **argv);
int audit_step0_main(int argc, char **argv);
int audit_trajectory_main(int argc, char **argv);

#endif
