/* libftprofile: the CUDA-free reader engines link to (placeholder; the foundation issue
 * fills it in). */
#ifndef FTPROFILE_H
#define FTPROFILE_H
#define FTPROF_VERSION 4
#endif
