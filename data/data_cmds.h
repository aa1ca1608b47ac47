/* data_cmds.h: `supkit data` subcommands that live in their own files
 * (data/sub_data_*.c), dispatched from cmd_data.c. */
#ifndef SUPKIT_DATA_DATA_CMDS_H
#define SUPKIT_DATA_DATA_CMDS_H

/* supkit data import-tokenizer (sub_data_import.c) */
int data_import_tokenizer_main(int argc, char **argv);

#endif
