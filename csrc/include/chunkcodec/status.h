/* Status codes shared by every C object of chunkcodec.  Plain C11, no Python.h. */
#ifndef CHUNKCODEC_STATUS_H
#define CHUNKCODEC_STATUS_H

typedef enum cc_status {
    CC_OK = 0,          /* done */
    CC_NOT_HOT = 2      /* the frame is valid or not, but not one the fast scanner handles */
} cc_status;

#endif
