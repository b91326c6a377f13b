/* bw_validate SCHEMA DOC: check a profile against api/schemas/profile.schema.json with the
 * project's validator (util/jschema). Prints "valid" or the failing JSON path; exit 0/1. */
#include <stdio.h>

#include "util/jschema.h"

int main(int argc, char **argv)
{
	char err[1024] = "";
	if (argc != 3) {
		fprintf(stderr, "usage: bw_validate SCHEMA DOC\n");
		return 2;
	}
	int r = ftjschema_validate_files(argv[1], argv[2], err, sizeof err);
	printf("%s: %s\n", argv[2], r ? err : "valid");
	return r ? 1 : 0;
}
