package engine

// The codes a rejection carries: an OpenRTB loss reason (Verdict.Loss, what
// the exchange tells the bidder through ${AUCTION_LOSS}) and a seat-non-bid
// reason (Verdict.NBR, what it reports in ext.seatnonbid[].nonbid[].statuscode).
//
// They live here, in a file that imports nothing, because the engine makes
// rejections of its own (the bids limit, the deadline) and every gate builds
// its verdicts with Reject: both already import engine, so one list serves
// them without a package of its own. Codes a user writes in the
// configuration (a seatPolicy rule's loss and nbr) stay numbers.

// Loss reason codes, OpenRTB 2.6 list "Loss Reason Codes", named as the list
// names them. 1000 and above are exchange-specific; bidguard uses none.
const (
	LossBidWon                                      = 0
	LossInternalError                               = 1
	LossImpressionOpportunityExpired                = 2
	LossInvalidBidResponse                          = 3
	LossInvalidDealID                               = 4
	LossInvalidAuctionID                            = 5
	LossInvalidAdvertiserDomain                     = 6
	LossMissingMarkup                               = 7
	LossMissingCreativeID                           = 8
	LossMissingBidPrice                             = 9
	LossMissingMinimumCreativeApprovalData          = 10
	LossBelowAuctionFloor                           = 100
	LossBelowDealFloor                              = 101
	LossLostToHigherBid                             = 102
	LossLostToPMPDeal                               = 103
	LossBuyerSeatBlocked                            = 104
	LossCreativeFilteredGeneral                     = 200
	LossCreativeFilteredPendingProcessing           = 201
	LossCreativeFilteredDisapproved                 = 202
	LossCreativeFilteredSizeNotAllowed              = 203
	LossCreativeFilteredIncorrectCreativeFormat     = 204
	LossCreativeFilteredAdvertiserExclusions        = 205
	LossCreativeFilteredAppBundleExclusions         = 206
	LossCreativeFilteredNotSecure                   = 207
	LossCreativeFilteredLanguageExclusions          = 208
	LossCreativeFilteredCategoryExclusions          = 209
	LossCreativeFilteredCreativeAttributeExclusions = 210
	LossCreativeFilteredAdTypeExclusions            = 211
	LossCreativeFilteredAnimationTooLong            = 212
	LossCreativeFilteredNotAllowedInPMPDeal         = 213
)

// Seat-non-bid reason codes, the OpenRTB community extension "Seat Non Bid",
// named as Prebid Server's non_bid_reason.go names them with an NBR prefix:
// 0 no bid, 100-199 the bidder was called and failed, 200-299 it was not
// called, 300-399 its response was rejected.
const (
	NBRNoBidUnknownError                            = 0
	NBRErrorGeneral                                 = 100
	NBRErrorTimeout                                 = 101
	NBRErrorInvalidBidResponse                      = 102
	NBRErrorBidderUnreachable                       = 103
	NBRRequestBlockedGeneral                        = 200
	NBRRequestBlockedUnsupportedChannel             = 201
	NBRRequestBlockedUnsupportedMediaType           = 202
	NBRRequestBlockedOptimized                      = 203
	NBRRequestBlockedPrivacy                        = 204
	NBRResponseRejectedGeneral                      = 300
	NBRResponseRejectedBelowFloor                   = 301
	NBRResponseRejectedDuplicateBid                 = 302
	NBRResponseRejectedInvalidCategoryMapping       = 303
	NBRResponseRejectedBelowDealFloor               = 304
	NBRResponseRejectedInvalidCreative              = 350
	NBRResponseRejectedCreativeSizeNotAllowed       = 351
	NBRResponseRejectedCreativeNotSecure            = 352
	NBRResponseRejectedCreativeIncorrectFormat      = 353
	NBRResponseRejectedCreativeMalware              = 354
	NBRResponseRejectedCreativeAdvertiserExclusions = 355
	NBRResponseRejectedCreativeAdvertiserBlocking   = 356
	NBRResponseRejectedCreativeCategoryExclusions   = 357
)
