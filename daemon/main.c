/* Placeholder until the daemon issue lands. */
#include <stdio.h>
int main(void)
{
	fprintf(stderr, "ftbenchd: not built yet in this version\n");
	return 2;
}
